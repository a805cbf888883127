"""Fuzz every reader of untrusted input: mutated real samples and hypothesis-generated inputs.

Allowed outcomes: a value, or ncclctl's own InputError/ParseError naming the file (and, for line-oriented
command outputs, the line). Not allowed: any other exception, the parsers' internal-error safety net, more
than ``TIME_LIMIT`` seconds for one input, or memory out of proportion to the input. Counts per target: see
``conftest.py`` (CI: 160; ``-m slow``: 11,000).
"""

from __future__ import annotations

import os
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .harness import describe, run_one
from .mutate import Mutator
from .targets import TARGETS, Target


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw else default


QUICK_MUTATED = _env_int("NCCLCTL_FUZZ_EXAMPLES", 100)
QUICK_GENERATED = _env_int("NCCLCTL_FUZZ_GENERATED", 30)
SLOW_MUTATED = _env_int("NCCLCTL_FUZZ_SLOW_EXAMPLES", _env_int("NCCLCTL_FUZZ_EXAMPLES", 10_000))
SLOW_GENERATED = _env_int("NCCLCTL_FUZZ_GENERATED", 1_000)
SEED = _env_int("NCCLCTL_FUZZ_SEED", 0)
#: One input in this many is traced with tracemalloc (in the slow run the address-space limit covers the rest).
QUICK_TRACE_EVERY = 3
SLOW_TRACE_EVERY = 25
#: Largest mutated input (the blow-up operation grows samples up to this).
QUICK_MAX_INPUT = 64 << 10
SLOW_MAX_INPUT = 1 << 20

NAMES = sorted(TARGETS)


def _target(name: str) -> Target:
    t = TARGETS[name]
    if t.func is None:
        pytest.skip(t.skip or "not available")
    return t


def _mutation_run(t: Target, count: int, trace_every: int, max_input: int) -> dict[str, int]:
    corpus = t.corpus()
    assert corpus, f"{t.name}: empty corpus"
    mut = Mutator(corpus, seed=zlib.crc32(t.name.encode()) ^ SEED, kind=t.kind, max_input=max_input)
    tally: dict[str, int] = {}
    failures: list[str] = []
    for i in range(count):
        data = mut.next()
        outcome = run_one(t.func, data, trace=(i % trace_every == 0), need_line=t.need_line)  # type: ignore[arg-type]
        tally[outcome.kind] = tally.get(outcome.kind, 0) + 1
        if not outcome.ok:
            failures.append(describe(t.name, data, outcome, f"mutation #{i}, seed {SEED}"))
            if len(failures) == 3:
                break
    assert not failures, "\n\n".join(failures)
    return tally


def _generated_strategy(t: Target) -> st.SearchStrategy[bytes]:
    alphabet = " \t\r\n:=,.-_()[]{}'\"<>/@#!?*&;0123456789abcdefxXABCDEFGHIJKLMNOPQRSTUVWXYZ"
    texts = st.text(alphabet=alphabet, max_size=400) | st.text(max_size=200)
    base = st.binary(max_size=400) | texts.map(lambda s: s.encode("utf-8", "surrogatepass"))
    corpus = t.corpus()
    if corpus:
        # A real sample with a generated piece spliced in at a generated place.
        spliced = st.tuples(st.sampled_from(corpus), st.integers(0, 1 << 20), base).map(
            lambda x: x[0][: x[1] % (len(x[0]) + 1)] + x[2] + x[0][x[1] % (len(x[0]) + 1):])
        base = base | spliced
    return base


def _generated_run(t: Target, count: int, trace: bool) -> None:
    @settings(max_examples=count, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(data=_generated_strategy(t))
    def check(data: bytes) -> None:
        outcome = run_one(t.func, data, trace=trace, need_line=t.need_line)  # type: ignore[arg-type]
        assert outcome.ok, describe(t.name, data, outcome, "hypothesis")

    check()


# ---------------------------------------------------------------------------------------------------- CI


@pytest.mark.parametrize("name", NAMES)
def test_corpus_samples(name: str) -> None:
    """Every real sample gives an allowed outcome, and most of them a value (else the fuzz would only ever
    exercise the error path)."""
    t = _target(name)
    corpus = t.corpus()
    assert corpus, f"{name}: empty corpus"
    values = 0
    for data in corpus:
        outcome = run_one(t.func, data, trace=False, need_line=t.need_line)  # type: ignore[arg-type]
        assert outcome.ok, describe(name, data, outcome, "corpus sample")
        values += outcome.kind == "value"
    assert values >= max(1, len(corpus) // 2), f"{name}: only {values} of {len(corpus)} samples parse"


@pytest.mark.parametrize("name", NAMES)
def test_mutated_samples(name: str, address_space_limit: int) -> None:
    t = _target(name)
    count = min(QUICK_MUTATED, t.quick_count or QUICK_MUTATED)
    tally = _mutation_run(t, count, trace_every=QUICK_TRACE_EVERY, max_input=QUICK_MAX_INPUT)
    assert sum(tally.values()) == count


@pytest.mark.parametrize("name", NAMES)
def test_generated_inputs(name: str, address_space_limit: int) -> None:
    _generated_run(_target(name), QUICK_GENERATED, trace=False)


# ---------------------------------------------------------------------------------------------------- slow


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_mutated_samples_full(name: str, address_space_limit: int) -> None:
    tally = _mutation_run(_target(name), SLOW_MUTATED, trace_every=SLOW_TRACE_EVERY, max_input=SLOW_MAX_INPUT)
    assert sum(tally.values()) == SLOW_MUTATED
    print(f"{name}: {SLOW_MUTATED} mutated inputs: {tally}")


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_generated_inputs_full(name: str, address_space_limit: int) -> None:
    _generated_run(_target(name), SLOW_GENERATED, trace=False)
