"""Generated code (minirad.codegen) against the graph it was written from.

The oracles are the library's own sweeps on the same graph (``minirad.gradient``,
``minirad.jacobian``, ``minirad.jvp``) and a fresh trace at new inputs: written
without preaccumulation, the code makes the reference sweep's operations in its
order and must agree to the last bit; preaccumulated, products and sums come in
another order and it must agree to 1e-12 relative (to the size of the terms); at
new inputs it must equal a fresh trace there, or raise ``ValueError``.  The random
programs are those of the tracer's own fuzz tests.
"""

import doctest
import math
import re

import numpy as np
import pytest
from oracles import ROOT
from test_array_trace_fuzz import random_case
from test_trace_reference import random_program

import minirad
from minirad import ops, trace
from minirad.exact.sweeps import reverse_sweep
from minirad.tracing import sources
from minirad.tracing.codegen import codegen, compiled
from minirad.tracing.ops import OPS

N_PROGRAMS = 300


# ------------------------------------------------------------------ helpers
def close(a, b, rtol=1e-12):
    """Equal to ``rtol`` relative to the largest entry of ``b`` (a sum reordered errs
    relative to its terms, not to its result)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= rtol * scale))


def same(a, b) -> bool:
    return np.shape(a) == np.shape(b) and bool(np.array_equal(a, b))


def float64_arrays(args) -> bool:
    return all(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in args)


def traced_array_programs(seed, count=N_PROGRAMS):
    """``count`` array programs of the fuzz that trace and have a gradient, on float64
    arrays.  (Where the sweep refuses a partial that is not finite on a branch no output
    reads, the code, which does not compute that branch's partials, need not refuse.)"""
    rng = np.random.default_rng(seed)
    found = 0
    while found < count:
        args, program = random_case(rng)
        if not float64_arrays(args):
            continue
        try:
            g = trace(program, *args)
        except Exception:  # noqa: BLE001 - the fuzz's hostile programs fail in many ways
            continue
        try:
            minirad.gradient(g)
        except ValueError:
            continue
        found += 1
        yield rng, args, program, g


# ---------------------------------------------------------------- formulas
def _operands(rng, arity: int, number: bool, low: float):
    """Operands in [low, low + 0.7]: (0.2, 0.9) suits most entries, (1.2, 1.9) arccosh."""
    if number:
        return tuple(float(v) for v in rng.uniform(low, low + 0.7, arity))
    return tuple(rng.uniform(low, low + 0.7, 5) for _ in range(arity))


@pytest.mark.parametrize("number", [True, False])
def test_every_formula_read_off_the_table_computes_what_the_rule_computes(number):
    rng = np.random.default_rng(0)
    namespace = {"np": np, "math": math}
    read = 0
    for op in OPS.values():
        value, partials = (op.value, op.partials) if number else op.on_arrays
        args = _operands(rng, op.arity, number, 0.2)
        with np.errstate(all="ignore"):
            try:
                y = value(*args)
            except ValueError:
                y = None
        if y is None or not np.all(np.isfinite(y)):
            args = _operands(rng, op.arity, number, 1.2)
            y = value(*args)
        for function, inputs in [(value, args)] + [(d, args + (y,)) for d in partials]:
            text = sources.formula(function, len(inputs))
            if text is None:
                continue
            read += 1
            names = [f"a{i}" for i in range(len(inputs))]
            got = eval(text.format(*names), namespace, dict(zip(names, inputs)))  # noqa: S307
            want = function(*inputs)
            assert same(got, want), (op.name, text)
    assert read >= (40 if number else 100)       # most formulas of the table are read


def test_a_formula_that_looks_at_a_value_is_not_read():
    assert sources.formula(lambda x, y: 1.0 if x > 0 else 0.0, 2) is None
    assert sources.formula(OPS["sin"].partials[0], 2) is None       # math.cos wants a float
    assert sources.formula(lambda x: np.asarray(x), 1) is None
    assert sources.formula(lambda a, b, y: -(a - b) ** 2.0 / (1 - y), 3) == \
        "-({0} - {1}) ** 2.0 / (1 - {2})"


def test_the_rules_written_out_compute_what_the_rules_compute():
    rng = np.random.default_rng(1)
    for rule, text_of in sources.VALUES.items():
        for shapes in [((3, 4), (4, 2)), ((4,), (4, 2)), ((3, 4), (4,)), ((4,), (4,)),
                       ((2, 3, 4), (4, 5))]:
            values = [rng.standard_normal(s) for s in shapes]
            got = eval(text_of(values).format("a", "b"), {"np": np},  # noqa: S307
                       {"a": values[0], "b": values[1]})
            want = rule.value(*values)
            assert type(got) is type(want) and same(got, want), shapes
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    g = trace(lambda a, b: (a @ b).sum(), a, b)
    plain = codegen(g, preaccumulate=False)
    assert "a @ b" in str(plain) and "u @ b.T" not in str(plain)
    assert "y_bar" in str(plain) and ".T @" in str(plain)
    value, grads = plain(a, b)
    assert all(same(x, y) for x, y in zip(grads, minirad.gradient(g)))
    t = [rng.standard_normal(a.shape), rng.standard_normal(b.shape)]
    assert same(codegen(g, "tangent", preaccumulate=False)(a, b, tangents=t)[1][0],
                minirad.jvp(g, t)[0])


# --------------------------------------------------------- random programs
def test_random_array_programs_give_the_reference_gradient_bit_for_bit():
    checked = 0
    for _, args, _, g in traced_array_programs(41):
        reference = minirad.gradient(g)
        value, grads = codegen(g, preaccumulate=False)(*args)
        assert same(value, g.value(g.outputs[0]))
        assert all(same(x, y) for x, y in zip(grads, reference)), str(codegen(g))
        checked += 1
    assert checked == N_PROGRAMS


def test_random_array_programs_preaccumulated_agree_to_rounding():
    saved = 0
    for _, args, _, g in traced_array_programs(42):
        code = codegen(g)
        _, grads = code(*args)
        assert all(close(x, y) for x, y in zip(grads, minirad.gradient(g))), str(code)
        saved += code.saved
    assert saved > 0


def test_random_array_programs_at_new_inputs_equal_a_fresh_trace_or_raise():
    outcomes = {"equal": 0, "raised": 0}
    for rng, args, program, g in traced_array_programs(43):
        plain, code = codegen(g, preaccumulate=False), compiled(g)
        new = [np.asarray(a + rng.normal(0.0, 0.3, a.shape)) for a in args]
        try:
            fresh = trace(program, *new)
        except (ValueError, TypeError):
            want = None
        else:
            try:
                want = (fresh.value(fresh.outputs[0]), minirad.gradient(fresh))
            except ValueError:   # a partial that is not finite (on a branch, maybe, that
                continue         # no output reads): nothing to compare
        for generated in (plain, code):
            try:
                value, grads = generated(*new)
            except ValueError as error:
                # a path the trace did not take, or a value the trace refuses
                assert want is None or "read" in str(error), (error, str(generated))
                outcomes["raised"] += 1
                continue
            assert want is not None, str(generated)
            exact = generated is plain
            assert (same if exact else close)(value, want[0])
            assert all((same if exact else close)(x, y) for x, y in zip(grads, want[1]))
            outcomes["equal"] += 1
    assert outcomes["equal"] >= N_PROGRAMS and outcomes["raised"] >= 10, outcomes


def _number_jacobian(code, g, args):
    rows = []
    for k in range(len(g.outputs)):
        seeds = np.eye(len(g.outputs))[k]
        rows.append(code(*args, cotangents=seeds)[1])
    return np.array(rows)


def traced_number_programs(seed, count=N_PROGRAMS):
    rng = np.random.default_rng(seed)
    found = 0
    while found < count:
        program = random_program(rng, int(rng.integers(1, 12)))
        args = (float(rng.uniform(-2, 2)), float(rng.uniform(-2, 2)),
                [float(v) for v in rng.uniform(-2, 2, 2)])
        try:
            g = trace(program, *args)
        except (ValueError, TypeError, ArithmeticError):
            continue
        found += 1
        yield rng, args, program, g


def test_random_programs_of_numbers_give_the_reference_jacobian():
    for _, args, _, g in traced_number_programs(44):
        reference = reverse_sweep(g, engine="reference", keep_values=False).jacobian
        plain = _number_jacobian(codegen(g, preaccumulate=False), g, args)
        assert same(plain, reference), str(codegen(g, preaccumulate=False))
        assert close(_number_jacobian(compiled(g), g, args), reference), str(compiled(g))


def test_random_programs_of_numbers_at_new_inputs_equal_a_fresh_trace_or_raise():
    equal = 0
    for rng, args, program, g in traced_number_programs(45):
        a, b, x = args
        new = (a + rng.normal(0, 0.2), b + rng.normal(0, 0.2), [v + rng.normal(0, 0.2)
                                                               for v in x])
        try:
            fresh = trace(program, *new)
            want = reverse_sweep(fresh, engine="reference", keep_values=False).jacobian
        except (ValueError, TypeError, ArithmeticError):
            want = None
        try:
            got = _number_jacobian(codegen(g, preaccumulate=False), g, new)
        except ValueError as error:
            assert want is None or "read" in str(error)
            continue
        assert want is not None and same(got, want)
        equal += 1
    assert equal >= 200


def test_random_programs_tangents_equal_the_forward_sweep():
    for rng, args, _, g in traced_number_programs(46, 100):
        tangents = rng.standard_normal(len(g.inputs))
        reference = minirad.jvp(g, tangents, engine="reference")
        plain = codegen(g, "tangent", preaccumulate=False)(*args, tangents=tangents)[1]
        assert same(plain, reference), str(codegen(g, "tangent", preaccumulate=False))
        fused = codegen(g, "tangent")(*args, tangents=tangents)[1]
        assert close(fused, reference)
    for rng, args, _, g in traced_array_programs(47, 100):
        tangents = [rng.standard_normal(g.shape(v)) for v in g.inputs]
        reference = minirad.jvp(g, tangents)
        plain = codegen(g, "tangent", preaccumulate=False)(*args, tangents=tangents)[1]
        assert all(same(x, y) for x, y in zip(plain, reference))
        fused = codegen(g, "tangent")(*args, tangents=tangents)[1]
        assert all(close(x, y) for x, y in zip(fused, reference))


# -------------------------------------------------------------- the source
def _statements(source: str):
    return [line.strip() for line in source.splitlines()[1:]
            if re.match(r"\s+\w+ [-+]?= ", line)]


def test_the_source_is_readable_python_with_one_statement_per_vertex():
    for *_, g in traced_array_programs(48, 50):
        for mode in ("forward", "tangent", "adjoint"):
            source = str(codegen(g, mode))
            compile(source, "generated", "exec")
            tape = g.memos["tracing.recording"].tape
            steps = sum(step is not None for step in tape.steps)
            commented = [s for s in _statements(source) if re.search(r"# \S+ = ", s)]
            assert len(commented) == steps     # one statement per value, its rule named
            for v in range(g.n_vertices):       # every vertex is a variable of that name
                name = sources.python_name(g.names[v])
                assert re.search(rf"\b{re.escape(name)}\b", source), (name, source)


def test_a_sparse_constant_matrix_is_called_by_its_own_rule():
    import scipy.sparse as sp

    from minirad.tracing.rules import matmul

    A = sp.csr_array(np.array([[2.0, 0.0, 1.0], [0.0, 3.0, 0.0]]))
    for program in (lambda x: np.tanh(matmul(A, x)).sum(), lambda x: (matmul(x, A.T)).sum()):
        x = np.array([0.5, -1.0, 2.0])
        g = trace(program, x)
        value, (gx,) = codegen(g, preaccumulate=False)(x)
        assert same(gx, minirad.gradient(g)[0]) and same(value, g.value(g.outputs[0]))


def test_the_lecture_example_reads_as_its_wengert_list():
    g = trace(lambda x1, x2: ops.log(x1) + x1 * x2 - ops.sin(x2), 2.0, 5.0)
    source = str(codegen(g, "forward"))
    assert "v3 = x1 * x2" in source and "y = v4 - v5" in source
    assert "math.sin(x2)" in source


def test_preaccumulation_makes_fewer_calls_than_the_graph_has_edges():
    x, c = np.linspace(-1, 1, 7), np.linspace(0.5, 1.5, 7)

    def relaxation(x, c):
        for _ in range(20):
            x = x + 0.01 * (c * x - x * x * x)
        return x.sum()
    g = trace(relaxation, x, c)
    code = codegen(g)
    assert code.calls < g.n_edges and code.saved > 0
    assert len(code.eliminated) == 100                    # five per step
    assert "0.03 * " in str(code)                         # 3 x^2: the constants multiplied
    _, grads = code(x, c)
    assert all(close(a, b) for a, b in zip(grads, minirad.gradient(g)))


def test_cotangents_are_added_in_place_only_into_arrays_the_code_owns():
    x = np.array([0.5, -1.0, 2.0])
    g = trace(lambda x: (x * 2.0 + x * 3.0 + np.exp(x) + np.reshape(x, (3,))).sum(), x)
    for code in (codegen(g), codegen(g, preaccumulate=False)):
        assert "+=" in str(code) or "-=" in str(code)
        _, (gx,) = code(x)
        assert same(gx, 2.0 + 3.0 + np.exp(x) + 1.0) or close(gx, 6.0 + np.exp(x))
    y = np.ones(3)
    h = trace(lambda x: (x + x).sum(), y)          # x_bar: the seed spread twice
    assert same(codegen(h, preaccumulate=False)(y)[1][0], np.full(3, 2.0))


# --------------------------------------------------------------- guards
def test_a_value_read_is_a_guard_that_raises_on_another_path():
    def leaky(x):
        return np.where(x > 0, x, 0.1 * x).sum()
    x = np.array([1.0, -2.0])
    code = codegen(trace(leaky, x))
    assert "guard(" in str(code)
    assert same(code(np.array([3.0, -1.0]))[1][0], np.array([1.0, 0.1]))
    with pytest.raises(ValueError, match="read greater"):
        code(np.array([-3.0, -1.0]))


def test_a_branch_taken_in_python_is_guarded_too():
    def branchy(x):
        return x * x if x > 1.0 else -x
    code = codegen(trace(branchy, 2.0))
    assert code(3.0)[1][0] == 6.0
    with pytest.raises(ValueError, match="another path"):
        code(0.5)


def test_detach_and_a_caught_error_are_guards():
    g = trace(lambda x: (x * minirad.detach(x)).sum(), np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="read"):
        compiled(g)(np.array([1.0, 3.0]))

    def careful(x):
        try:
            return ops.log(x)
        except ValueError:
            return x
    g = trace(careful, -1.0)
    assert compiled(g)(-2.0)[0] == -2.0
    with pytest.raises(ValueError, match="read"):
        compiled(g)(2.0)


def test_data_arguments_are_parameters_and_checked_as_replay_checks_them():
    w, X = np.array([0.5, -1.0]), np.array([[1.0, 2.0], [3.0, 4.0]])
    g = trace(lambda w, X, scale: np.tanh(X @ w).sum() * scale, w, X, 2.0, wrt=[0])
    code = compiled(g)
    value, (dw,) = code(w, 2 * X, 3.0)
    fresh = trace(lambda w, X, scale: np.tanh(X @ w).sum() * scale, w, 2 * X, 3.0, wrt=[0])
    assert close(value, fresh.value(fresh.outputs[0])) and close(dw, minirad.gradient(fresh)[0])
    with pytest.raises(ValueError, match="shape"):
        code(np.ones(3), X, 2.0)
    with pytest.raises(ValueError, match="non-finite"):
        code(np.array([np.nan, 1.0]), X, 2.0)
    with pytest.raises(TypeError, match="arguments"):
        code(w, X)


def test_codegen_refuses_what_it_cannot_write():
    with pytest.raises(TypeError, match="LCG"):
        codegen("not a graph")
    with pytest.raises(ValueError, match="not traced"):
        codegen(minirad.LCG.from_edges([("x", "y", 2.0)], inputs=["x"], outputs=["y"]))
    g = trace(lambda x: x * x, 2.0)
    with pytest.raises(ValueError, match="mode"):
        codegen(g, "backward")
    with pytest.raises(TypeError, match="cotangents"):
        codegen(trace(lambda x: x * 2.0, np.ones(2)))(np.ones(2))


def test_non_finite_values_at_new_inputs_raise_as_the_trace_does():
    g = trace(lambda x: np.log(x).sum(), np.array([1.0, 2.0]))
    with pytest.raises(ValueError):
        trace(lambda x: np.log(x).sum(), np.array([-1.0, 2.0]))
    with pytest.raises(ValueError, match="not finite"):
        compiled(g)(np.array([-1.0, 2.0]))
    h = trace(lambda x: ops.log(x), 1.0)
    with pytest.raises(ValueError):
        compiled(h)(-1.0)


def test_the_docs_page_on_three_ways_runs():
    page = ROOT / "docs" / "three_ways.md"
    result = doctest.testfile(str(page), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted >= 20
