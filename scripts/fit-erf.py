#!/usr/bin/env python3
"""The coefficients of the encoder's erf (engines/kernels/encoder_math.h, kErfPoly / kErfCentre).

erf on [0, 4] as eight polynomials of degree 6, one per half-unit interval, in t = a - centre;
the first piece, on [0, 0.5), is fitted in a itself as a * q(a) (no constant term), so that
erf(a) / a stays accurate as a goes to 0. Least squares at 400 Chebyshev nodes per piece, in
binary64, then rounded to binary32. The check evaluates the rounded pieces in binary32 with
fused multiply-adds (each step rounded once), as the SIMD levels do, against math.erf.

Usage: /usr/bin/python3 scripts/fit-erf.py   (Debian's python3-numpy)
Prints the two C++ tables and the measured errors.
"""
from math import erf

import numpy as np

DEGREE = 6
WIDTH = 0.5
PIECES = 8
f32 = np.float32


def chebyshev_nodes(a, b, n=400):
    k = np.arange(n)
    return (a + b) / 2 + (b - a) / 2 * np.cos((2 * k + 1) * np.pi / (2 * n))


def fit():
    coefs, centres = [], []
    for i in range(PIECES):
        a, b = i * WIDTH, (i + 1) * WIDTH
        x = chebyshev_nodes(a, b)
        if i == 0:
            c = 0.0
            q = np.polyfit(x, np.array([erf(v) / v for v in x]), DEGREE - 1)
            p = np.append(q, 0.0)
        else:
            c = a + WIDTH / 2
            p = np.polyfit(x - c, np.array([erf(v) for v in x]), DEGREE)
        coefs.append([f32(v) for v in p])
        centres.append(f32(c))
    return coefs, centres


def evaluate(a, coefs, centres):
    a = f32(min(a, 4.0))
    i = min(int(a * f32(2)), PIECES - 1)
    t = f32(a - centres[i])
    p = coefs[i][0]
    for c in coefs[i][1:]:
        p = f32(np.float64(p) * np.float64(t) + np.float64(c))  # one rounding: a fused multiply-add
    return float(p)


def main():
    coefs, centres = fit()
    grid = np.linspace(0, 4.5, 200001)
    abs_err = max(abs(evaluate(x, coefs, centres) - erf(float(f32(x)))) for x in grid)
    small = np.geomspace(1e-30, 0.5, 3000)
    rel_err = max(abs(evaluate(x, coefs, centres) - erf(float(f32(x)))) / erf(float(f32(x))) for x in small)
    print(f"// absolute error on [0, 4.5]: {abs_err:.3g}; relative on (0, 0.5]: {rel_err:.3g}")
    print("alignas(64) constexpr float kErfPoly[7][16] = {")
    for k in range(DEGREE + 1):
        print("  {" + ", ".join(f"{float(coefs[i][k]):.9e}f" for i in range(PIECES)) + "},")
    print("};")
    print("alignas(64) constexpr float kErfCentre[16] = {" + ", ".join(f"{float(c)}f" for c in centres) + "};")


if __name__ == "__main__":
    main()
