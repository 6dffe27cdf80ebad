"""Faultline's demo data: realistic attempt bundles (docs/bundles.md) of known failures.

``demo.bundles`` is the catalogue of failure kinds, each writing one bundle from which the default rule
pack produces the kind's intended diagnosis; ``demo.dataset`` writes a month of failed attempts on
two clusters. Everything is a pure function of its arguments: the same arguments give byte-identical
files.
"""
