"""Compare the three Python CEL libraries on DRA-shaped selectors.

Not part of the product: run it in a scratch virtual environment with the
candidates installed, e.g.

    python3 -m venv /tmp/celbench
    /tmp/celbench/bin/pip install cel-expr-python==0.1.3 \
        common-expression-language==0.10.0 cel-python==0.5.0
    /tmp/celbench/bin/python hack/cel_compare.py

It measures, for a class selector and a request selector like the ones in
upstream's scheduler_perf workloads, the compile time per expression and the
evaluation time per device (5 000 devices, a fresh input dict per call, as a
500-node x 10-device cluster without result caching), and checks which of the
syntax real DRA users write each library accepts. The figures are recorded in
ARCHITECTURE.md.
"""

# ruff: noqa: PLC0415 - each candidate is imported only when measured

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

DEVICES = 5000
COMPILES = 200
CLASS_SELECTOR = 'device.driver == "test-driver.cdi.k8s.io"'
REQUEST_SELECTOR = (
    'device.attributes["test-driver.cdi.k8s.io"].model == "A100" && '
    'device.attributes["test-driver.cdi.k8s.io"].numa >= 0'
)
SYNTAX = {
    "cel.bind": 'cel.bind(d, device.attributes["test-driver.cdi.k8s.io"], d.numa >= 0)',
    "optional .?": 'device.attributes["test-driver.cdi.k8s.io"].?nope.orValue("") == ""',
    # Rejected at compile time only by a checker that knows the declarations.
    "compile-time check": "device.driver == undeclared(1)",
}


def device(index: int) -> dict[str, Any]:
    return {
        "driver": "test-driver.cdi.k8s.io",
        "attributes": {"test-driver.cdi.k8s.io": {"model": "A100", "numa": index % 4}},
        "capacity": {"test-driver.cdi.k8s.io": {"memory": "1Gi"}},
    }


def timed(
    label: str, compile_: Callable[[str], Any], run: Callable[[Any, dict[str, Any]], Any]
) -> None:
    started = time.perf_counter()
    for _ in range(COMPILES):
        compile_(REQUEST_SELECTOR)
    compile_us = (time.perf_counter() - started) / COMPILES * 1e6
    programs = [compile_(CLASS_SELECTOR), compile_(REQUEST_SELECTOR)]
    inputs = [device(i) for i in range(DEVICES)]
    started = time.perf_counter()
    for data in inputs:
        for program in programs:
            if run(program, {"device": data}) is not True:
                raise AssertionError(label)
    total = time.perf_counter() - started
    syntax = []
    for name, expression in SYNTAX.items():
        checking = name == "compile-time check"
        try:
            program = compile_(expression)
        except Exception:  # a rejection is the answer here
            ok = checking
        else:
            try:
                ok = not checking and run(program, {"device": device(0)}) is True
            except Exception:
                ok = False
        syntax.append(f"{name}={'yes' if ok else 'no'}")
    print(
        f"{label:32s} compile {compile_us:8.1f} us  eval {total / (2 * DEVICES) * 1e6:6.2f} us"
        f"/selector  {DEVICES}x2 {total * 1e3:7.1f} ms  {' '.join(syntax)}"
    )


def cel_expr_python() -> None:
    from cel_expr_python import cel  # type: ignore[import-not-found]
    from cel_expr_python.ext import ext_bindings, ext_optional  # type: ignore[import-not-found]

    env = cel.NewEnv(
        variables={"device": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)},
        extensions=[ext_optional.ExtOptional(), ext_bindings.ExtBindings()],
    )
    timed("cel-expr-python 0.1.3", env.compile, lambda p, data: p.eval(data=data).value())


def common_expression_language() -> None:
    import cel  # type: ignore[import-not-found]

    timed("common-expression-language 0.10.0", cel.compile, lambda p, data: p.execute(data))


def celpy_() -> None:
    import celpy  # type: ignore[import-not-found]

    env = celpy.Environment()

    def compile_(expression: str) -> Any:
        return env.program(env.compile(expression))

    def run(program: Any, data: dict[str, Any]) -> Any:
        return bool(program.evaluate({"device": celpy.json_to_cel(data["device"])}))

    timed("cel-python (celpy) 0.5.0", compile_, run)


if __name__ == "__main__":
    for candidate in (cel_expr_python, common_expression_language, celpy_):
        candidate()
