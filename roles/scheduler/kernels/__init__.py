"""roleserve's native CPU kernels (C++, AVX2/FMA, OpenMP), loaded through ctypes by ``native``."""
