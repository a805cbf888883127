"""The one C integer parser (ncclctl.nccl.params): strtol/strtoll, the int cast, atoi, ncclLoadParam.

Edge cases are checked against their expected C results and, where the C library is reachable through ctypes,
against glibc itself."""

from __future__ import annotations

import ctypes

import pytest

from ncclctl.nccl.params import (
    INT_MAX, INT_MIN, LONG_MAX, LONG_MIN, ULONG_MAX, CInt, c_atoi, c_int, load_param, param_int, strtol, strtoul,
    to_int,
)

HUGE = "9" * 5000  # far past 64 bits, and past Python's 4300-digit int() limit


@pytest.mark.parametrize("text,base,value,end,digits,overflow,whole", [
    ("", 0, 0, 0, False, False, False),
    (" 0x1f", 0, 31, 5, True, False, True),
    ("0X1F", 0, 31, 4, True, False, True),
    ("08", 0, 0, 1, True, False, False),  # leading 0: octal, and 8 is not an octal digit
    ("010", 0, 8, 3, True, False, True),
    ("-", 0, 0, 0, False, False, False),  # a sign alone: no digits, nothing consumed
    ("+", 0, 0, 0, False, False, False),
    ("+5", 0, 5, 2, True, False, True),
    ("-0x10", 0, -16, 5, True, False, True),
    ("0x", 0, 0, 1, True, False, False),  # "0" is the number, "x" is left over
    ("0xg", 16, 0, 1, True, False, False),
    ("1e3", 0, 1, 1, True, False, False),  # no exponents in an integer
    ("\t\n\v\f\r 42", 0, 42, 8, True, False, True),  # every C isspace character is skipped
    ("42\n", 0, 42, 2, True, False, False),  # trailing white space is not consumed
    ("\u00a07", 0, 0, 0, False, False, False),  # NO-BREAK SPACE is not C white space
    ("\x1c7", 0, 0, 0, False, False, False),  # nor the separators Python's str.isspace() accepts
    ("\u0663", 0, 0, 0, False, False, False),  # ARABIC-INDIC DIGIT THREE is not a C digit
    ("- 5", 0, 0, 0, False, False, False),  # no white space after the sign
    ("0x10", 10, 0, 1, True, False, False),  # base 10: no hex prefix
    ("ff", 16, 255, 2, True, False, True),
    ("0xff", 16, 255, 4, True, False, True),
    ("zz", 36, 1295, 2, True, False, True),
    ("777", 8, 511, 3, True, False, True),
    ("9223372036854775807", 0, LONG_MAX, 19, True, False, True),
    ("9223372036854775808", 0, LONG_MAX, 19, True, True, True),  # saturates, ERANGE
    ("-9223372036854775808", 0, LONG_MIN, 20, True, False, True),
    ("-9223372036854775809", 0, LONG_MIN, 20, True, True, True),
    ("0x8000000000000000", 0, LONG_MAX, 18, True, True, True),
    ("99999999999999999999 # x", 0, LONG_MAX, 20, True, True, False),
    (HUGE, 0, LONG_MAX, 5000, True, True, True),
    ("-" + HUGE + "x", 0, LONG_MIN, 5001, True, True, False),
    ("0" * 5000 + "1", 0, 1, 5001, True, False, True),  # leading zeros are not magnitude
])
def test_strtol_edge_cases(text, base, value, end, digits, overflow, whole):
    r = strtol(text, base)
    assert r == CInt(value, end, r.base, digits, overflow, whole)
    assert r.rest(text) == text[end:]


@pytest.mark.parametrize("text,base,value,overflow", [
    ("0xa088c20300d06583", 16, 0xA088C20300D06583, False),  # a NIC GUID: past LONG_MAX, fine for strtoull
    ("a088c20300d06583", 16, 0xA088C20300D06583, False),
    ("18446744073709551615", 0, ULONG_MAX, False), ("18446744073709551616", 0, ULONG_MAX, True),
    ("-1", 0, ULONG_MAX, False), ("-18446744073709551615", 0, 1, False), (HUGE, 0, ULONG_MAX, True),
    ("", 0, 0, False), ("x", 16, 0, False),
])
def test_strtoul(text, base, value, overflow):
    r, signed = strtoul(text, base), strtol(text, base)
    assert (r.value, r.overflow) == (value, overflow)
    assert (r.end, r.digits, r.whole) == (signed.end, signed.digits, signed.whole)  # the same syntax


def test_base_is_resolved_like_c():
    assert [strtol(s).base for s in ("12", "012", "0x12", "", "x")] == [10, 8, 16, 10, 10]
    with pytest.raises(ValueError):
        strtol("1", 1)


@pytest.mark.parametrize("text,value", [
    ("1", 1), ("-1", -1), ("2147483647", INT_MAX), ("2147483648", INT_MIN), ("4294967295", -1), ("4294967296", 0),
    ("4294967297", 1), ("0x100000001", 1), ("99999999999999999999", -1), ("-99999999999999999999", 0), ("", 0),
])
def test_int_cast_truncates_to_32_bits(text, value):
    assert c_int(text) == value
    assert to_int(strtol(text).value) == value


def test_atoi_is_a_base_10_int_cast():
    assert [c_atoi(s) for s in ("010", "0x10", " 12abc", "4294967297", "x", "")] == [10, 0, 12, 1, 0, 0]


@pytest.mark.parametrize("text,loaded", [
    (None, None), ("", None),  # unset or empty: the default
    ("   ", 0),  # not empty: strtoll finds no digits and NCCL uses 0
    ("auto", 0), ("0x68", 104), ("3 # comment", 3), ("08", 0),
    ("4294967297", 4294967297),  # int64 parameters are not cut to 32 bits
    ("9223372036854775808", None), ("-9223372036854775809", None), (HUGE, None),  # ERANGE: the default
])
def test_load_param(text, loaded):
    assert load_param(text) == loaded
    assert param_int(text, 7) == (7 if loaded is None else loaded)


# --- against the C library -------------------------------------------------------------------------------------

def _libc():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.strtol.restype = ctypes.c_long
        libc.strtol.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int]
        libc.strtoul.restype = ctypes.c_ulong
        libc.strtoul.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int]
        libc.atoi.restype = ctypes.c_int
        libc.atoi.argtypes = [ctypes.c_char_p]
        return libc
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        return None


EDGES = ["", " 0x1f", "08", "-", "+5", "0x", "0X", "0xg", "1e3", "\t\n\v\f\r 42", "42\n", "- 5", "+-1", "0x-1",
         "9223372036854775807", "9223372036854775808", "-9223372036854775809", "0x8000000000000000", "4294967297",
         "2147483648", "99999999999999999999", "ff", "FF", "zz", "0b101", "  +0x7fffffffffffffff", "0777", "0789",
         "0xa088c20300d06583", "18446744073709551615", "18446744073709551616", "-18446744073709551615",
         "-18446744073709551616", "-9223372036854775808"]


@pytest.mark.parametrize("base", [0, 8, 10, 16, 36])
def test_strtol_matches_libc(base):
    libc = _libc()
    if libc is None or ctypes.sizeof(ctypes.c_long) != 8:
        pytest.skip("no LP64 C library via ctypes")
    for s in EDGES:
        for c_func, model in ((libc.strtol, strtol), (libc.strtoul, strtoul)):
            buf = ctypes.create_string_buffer(s.encode())
            end = ctypes.c_char_p()
            ctypes.set_errno(0)
            value = c_func(buf, ctypes.byref(end), base)
            overflow = ctypes.get_errno() != 0
            consumed = ctypes.cast(end, ctypes.c_void_p).value - ctypes.addressof(buf)
            r = model(s, base)
            assert (r.value, r.end, r.overflow) == (value, consumed, overflow), (s, base, model.__name__)
        if base == 0:
            assert c_atoi(s) == libc.atoi(s.encode()), s
