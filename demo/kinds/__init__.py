"""The failure stories, one function per kind, grouped by where the fault lies.

Each story takes a ``BundleDraft``, tells one attempt's failure through it (the draft has the job
start, train and end) and returns the nodes the fault lies on, as the diagnosis should name them:
empty for a cause that belongs to the whole job. ``demo.bundles`` holds the catalogue.
"""
