"""Toolchains as data: which machine builds (build host), which machine runs the output
(target), the compilers, and the CMake toolchain file each generates. See ``registry``."""
