#!/usr/bin/env python3
"""mathfn-coeffs.py - the polynomial coefficients of codegen/mathfn.c.

Each series is derived here from its closed form, in exact rationals,
then rounded to the target type (C hex-float literals), and the script
prints the truncation error on the reduced interval (checked with
mpmath, 50 digits), which must be far below half an ulp:

  exp   e^r = 1 + r + sum_{n>=2} r^n / n!           |r| <= ln2/2
  log   log(1+f) = 2 atanh(s), s = f/(2+f):
        R(z) = sum_{k>=1} 2 z^k / (2k+1), z = s^2    |s| <= 3 - 2 sqrt2
  tanh  Lambert's continued fraction
        tanh x = x / (1 + z/(3 + z/(5 + ...))), z = x^2, cut at depth m,
        as tanh x = x + x z N(z)/D(z)                |x| <= atanh(1/2)

Run: python3 tools/mathfn-coeffs.py  (needs mpmath for the error check)
"""
from fractions import Fraction as Q
import math
import struct

import mpmath

mpmath.mp.dps = 50


def hex32(q):
    f = struct.unpack("f", struct.pack("f", float(q)))[0]
    return tidy(float.hex(f)) + "f"


def hex64(q):
    return tidy(float.hex(float(q)))


def tidy(text):
    """'0x1.5555560000000p-3' -> '0x1.555556p-3'"""
    mant, exp = text.split("p")
    if "." in mant:
        mant = mant.rstrip("0").rstrip(".")
    return mant + "p" + exp


def exp_coeffs(degree):
    return [Q(1, math.factorial(n)) for n in range(2, degree + 1)]


def log_coeffs(terms):
    return [Q(2, 2 * k + 1) for k in range(1, terms + 1)]


def poly_mul(a, b):
    out = [Q(0)] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return out


def poly_add(a, b):
    n = max(len(a), len(b))
    a = a + [Q(0)] * (n - len(a))
    b = b + [Q(0)] * (n - len(b))
    return [x + y for x, y in zip(a, b)]


def tanh_pade(depth):
    """N, D (coefficients in z, lowest first) with tanh x = x + x z N/D."""
    p, q = [Q(2 * depth + 1)], [Q(1)]  # value at level 'depth' is p/q
    for j in range(depth - 1, -1, -1):  # level j: (2j+1) + z q/p
        p, q = poly_add([Q(2 * j + 1) * c for c in p], [Q(0)] + q), p
    # tanh x / x = q/p; (q - p)/z / p is the correction
    diff = poly_add(q, [-c for c in p])
    assert diff[0] == 0
    num = diff[1:]
    lead = p[0]
    return [c / lead for c in num], [c / lead for c in p]


def horner(cs, x):
    acc = mpmath.mpf(0)
    for c in reversed(cs):
        acc = acc * x + mpmath.mpf(c.numerator) / c.denominator
    return acc


def report(name, err, bits):
    print(f"/* {name}: truncation error {mpmath.nstr(err, 3)} "
          f"(half an ulp: 2^-{bits + 1} = {mpmath.nstr(mpmath.mpf(2) ** -(bits + 1), 3)}) */")


def main():
    r = mpmath.log(2) / 2
    for degree, bits, fmt in ((13, 52, hex64), (7, 23, hex32)):
        cs = exp_coeffs(degree)
        # cs start at r^2: e^r = 1 + r + r^2 * sum c_n r^(n-2)
        err = max(abs(mpmath.exp(t) - 1 - t - t * t * horner(cs, t))
                  / mpmath.exp(t) for t in (-r, r))
        report(f"exp degree {degree}", err, bits)
        print("exp:", ", ".join(fmt(c) for c in cs))
    s = 3 - 2 * mpmath.sqrt(2)
    for terms, bits, fmt in ((10, 52, hex64), (4, 23, hex32)):
        cs = log_coeffs(terms)
        z = s * s
        exact = 2 * mpmath.atanh(s)
        approx = 2 * s + s * z * horner(cs, z)
        report(f"log {terms} terms", abs(approx - exact) / exact, bits)
        print("log:", ", ".join(fmt(c) for c in cs))
    x = mpmath.atanh(mpmath.mpf(1) / 2)
    for depth, bits, fmt in ((7, 52, hex64), (4, 23, hex32)):
        num, den = tanh_pade(depth)
        z = x * x
        approx = x + x * z * horner(num, z) / horner(den, z)
        report(f"tanh depth {depth}", abs(approx - mpmath.tanh(x)) / mpmath.tanh(x), bits)
        print("tanh N:", ", ".join(fmt(c) for c in num))
        print("tanh D:", ", ".join(fmt(c) for c in den))


if __name__ == "__main__":
    main()
