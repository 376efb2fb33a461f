"""roleserve's native CPU kernels (C++ with OpenMP; an AVX2 and an AVX-512 path, chosen at run time), loaded through
ctypes by ``native``."""
