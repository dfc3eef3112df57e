"""The infrastructure floor: what any part of bundlegraph may use and what knows nothing of
releases, specs or stages (import-linter checks it: core imports no domain module).

- settings (every ``BUNDLEGRAPH_*`` variable), paths (the work and cache directories), memo
  (the process's memo tables);
- errors (the error classes and their exit codes), report (what a run prints);
- proc and _supervise (running programs), fsutil, oslock and runlock (files and locks),
  state (the stamps: action keys and output fingerprints);
- download, progress, extract (fetching and unpacking), gitmeta (git metadata of a tree);
- platforms (the operating systems a bundle targets, one row of facts each: the only place an OS
  name is compared) and gpus (this host's NVIDIA GPUs, as ``nvidia-smi`` reports them).
"""
