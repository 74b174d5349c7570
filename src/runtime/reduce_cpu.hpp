// CPU reduction kernels: the loops that combine two host buffers element by element (the CUDA
// kernels live in src/transport/cuda/). Semantics follow Open MPI 4.1's predefined ops
// (ompi/mca/op/base/op_base_functions.c, out = op(out, in)) on the same inputs:
//   sum, prod   integers wrap modulo 2^bits; floating types use IEEE + and *
//   min         inout = (inout < in ? inout : in)   (a NaN or an equal +-0 gives in)
//   max         inout = (inout > in ? inout : in)
//   avg         floating types only: combines like sum, divideBy() divides at the end
//   band, bor, bxor    integer types only: inout = inout & in, |, ^
//   land, lor, lxor    integer types only: 1 or 0 in the element's type, nonzero is true
// Checked against MPI_Reduce_local of Debian 12's Open MPI 4.1.4 with OMPI_MCA_op=^avx:
// bit-identical for every integer and float type and op (bar which NaN's payload a sum
// or product of two NaNs keeps). Open MPI's default op/avx component differs in two
// ways, both confined to its SIMD body (its scalar tail runs the base functions):
// int8/uint8/int16/uint16 sums saturate instead of wrapping (Open MPI issue #8045,
// closed "wontfix"), and float/double min/max are minps/maxps(in, out), which differ
// from the above when an operand is NaN or the two are zeros of opposite sign. So exact
// comparisons with PMPI_Allreduce on overflowing 8/16-bit sums need OMPI_MCA_op=^avx.
// fp16 and bf16 are combined in float: both operands are widened, combined, and the
// result is rounded once back to 16 bits (round to nearest even). Float has at least
// 2p + 2 bits of precision for both formats (p = 11 and 8), so that one rounding gives
// the correctly rounded 16-bit result of every pairwise +, * and / (no double rounding).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "blink/blink.h"
#include "runtime/datatype.hpp"  // the kernels' callers check and name types with it

namespace blink::runtime {

// inout[i] = op(inout[i], in[i]) for i < count (see the table above; avg combines like
// sum). The ranges must not overlap. Pointers need only the element's own alignment.
// Throws blinkInvalidArgument as checkReduction does, or for a null pointer when
// count > 0. Uses the best instruction set this CPU has (see CpuIsa).
void reduceInto(void* inout, const void* in, std::size_t count, blinkDataType_t type,
                blinkRedOp_t op);
// reduceInto without its checks, for a caller that ran checkReduction once for many
// calls and passes buffers the algorithms own (a small collective's every combine).
void reduceIntoChecked(void* inout, const void* in, std::size_t count, blinkDataType_t type,
                       blinkRedOp_t op);

// buf[i] = buf[i] / divisor for floating types (the last step of avg); fp16/bf16 are
// divided in float and rounded once. Throws blinkInvalidArgument for an integer or
// unknown type, a zero divisor, or a null buffer when count > 0.
void divideBy(void* buf, std::size_t count, blinkDataType_t type, int divisor);

// IEEE binary16 and bfloat16 <-> float, round to nearest even; Inf, NaN and subnormals
// are converted exactly. NaNs stay NaNs with their sign and the top payload bits, and
// come out quiet (as the x86 F16C instructions do, so every code path gives the same
// bits).
float halfToFloat(std::uint16_t h);
std::uint16_t floatToHalf(float f);
float bfloat16ToFloat(std::uint16_t b);
std::uint16_t floatToBfloat16(float f);

// ---- Instruction-set variants (for tests and benchmarks) ----------------------------
// The library is built for the x86-64 baseline (SSE2); the loops are also compiled for
// AVX2 (+F16C for fp16) and AVX-512 (F, BW, VL, DQ), picked once at run time. Every
// variant gives bit-identical results, except for which NaN's payload survives when both
// operands of a sum or product are NaN (the compiler may swap the operands of + and *).
enum class CpuIsa { Generic, Avx2, Avx512 };

std::string toString(CpuIsa isa);  // "generic", "avx2", "avx512"
bool cpuIsaSupported(CpuIsa isa);  // whether this CPU can run the variant
CpuIsa bestCpuIsa();               // the variant reduceInto uses

// reduceInto with a chosen variant; throws blinkUnsupported where this CPU lacks it.
void reduceIntoIsa(CpuIsa isa, void* inout, const void* in, std::size_t count, blinkDataType_t type,
                   blinkRedOp_t op);
// divideBy with a chosen variant; throws blinkUnsupported where this CPU lacks it.
void divideByIsa(CpuIsa isa, void* buf, std::size_t count, blinkDataType_t type, int divisor);

}  // namespace blink::runtime
