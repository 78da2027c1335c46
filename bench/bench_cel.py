"""CEL candidates for schema conditions, side by side: compile and evaluate, medians and p99s.

Run: python bench/bench_cel.py [--iterations N]
Needs the two candidates the engine does not use: pip install cel-python common-expression-language
(cel-expr-python, the one chosen, is a dependency). The expression is a typical caveat: an
int comparison, a string membership in a list and a boolean. Results in microseconds.
"""

from __future__ import annotations

import argparse
import platform

from stats import measure  # bench/stats.py, beside this script

EXPR = 'level >= 3 && region in allowed && !suspended'
DATA = {"level": 5, "region": "eu", "allowed": ["eu", "us"], "suspended": False}


def cel_expr_python() -> tuple[object, object]:
    from cel_expr_python import cel

    env = cel.NewEnv(variables={"level": cel.Type.INT, "region": cel.Type.STRING,
                                "allowed": cel.Type.List(cel.Type.STRING), "suspended": cel.Type.BOOL})
    program = env.compile(EXPR)
    assert program.eval(data=DATA).value() is True
    return (lambda: env.compile(EXPR)), (lambda: program.eval(data=DATA).value())


def common_expression_language() -> tuple[object, object]:
    import cel

    program = cel.compile(EXPR)
    assert program.execute(DATA) is True
    return (lambda: cel.compile(EXPR)), (lambda: program.execute(DATA))


def cel_python() -> tuple[object, object]:
    import celpy

    env = celpy.Environment()
    program = env.program(env.compile(EXPR))
    typed = {"level": celpy.celtypes.IntType(5), "region": celpy.celtypes.StringType("eu"),
             "allowed": celpy.celtypes.ListType([celpy.celtypes.StringType("eu"), celpy.celtypes.StringType("us")]),
             "suspended": celpy.celtypes.BoolType(False)}
    assert bool(program.evaluate(typed)) is True
    return (lambda: env.program(env.compile(EXPR))), (lambda: program.evaluate(celpy.json_to_cel(DATA)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=5000)
    n = ap.parse_args().iterations
    print(f"python {platform.python_version()}, {n} iterations; microseconds (median / p99)")
    for name, make in (("cel-expr-python", cel_expr_python), ("common-expression-language", common_expression_language),
                       ("cel-python", cel_python)):
        try:
            compile_fn, eval_fn = make()
        except ImportError:
            print(f"{name:28s} not installed")
            continue
        cm, cp = measure(compile_fn, max(50, n // 20), warmup=10)  # type: ignore[arg-type]
        em, ep = measure(eval_fn, n)  # type: ignore[arg-type]
        print(f"{name:28s} compile {cm:9.1f} / {cp:9.1f}   evaluate {em:8.2f} / {ep:8.2f}")


if __name__ == "__main__":
    main()
