"""What the HTML apps (``pages``, ``workbench``) share: the one way they answer htmx (``web.htmx``)."""
