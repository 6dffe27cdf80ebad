"""Slurm: discovery with ``sacct -P`` text output, job output paths from ``scontrol show job -o``,
job output read from the shared filesystem."""
