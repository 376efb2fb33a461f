// What every isa_*.cpp includes before it sets its target: the system headers, compiled for plain x86-64.
// Each set's own code then sits in a namespace of its own, so the linker never merges one set's copy of an
// inline function or template into another's (an AVX-512 copy reached from the AVX2 path would fault on a
// CPU without AVX-512). The headers' include guards keep the kernels' own #includes from repeating them.
#pragma once

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>
