"""Local Slurm test cluster and container/profiler stand-ins for the end-to-end tests."""
