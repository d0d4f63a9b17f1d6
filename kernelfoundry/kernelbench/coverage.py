"""Why a KernelBench problem got no starting kernel, as a short countable category.

The bench (``python -m kernelfoundry.bench DIR``) and the coverage bench
(``experiments/bench_kernelbench.py``) count problems by these categories, so a report
says "no template: aten.foo (3)" rather than listing three long messages.
"""

from __future__ import annotations

import re


def failure_category(stage: str, reason: str) -> str:
    """``"no template: <op>"`` when the seed generator names an op it cannot lower, else
    ``"<stage>: <reason>"`` with names, values and lists blanked out and the tail cut."""
    m = re.search(r"op (\S+) has no template", reason)
    if m:
        return f"no template: {m.group(1)}"
    # a failed check names its shape, input profile and config first: the reason is what follows
    reason = re.sub(r"^shape \{[^}]*\}, profile '[^']*', config [^:]*: ", "", reason)
    reason = re.sub(r"problem file \S+ cannot be imported: ", "", reason)
    reason = re.sub(r"problem file \S+: ", "", reason)
    reason = re.sub(r"\{[^}]*\}", "{..}", reason)
    reason = re.sub(r"\[[^\]]*\]", "[..]", reason)
    reason = re.sub(r"'[^']*'", "'..'", reason)
    return f"{stage}: {reason.split(' (')[0][:90]}"
