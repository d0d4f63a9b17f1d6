"""Plot prompt-variant lineage and credit (for the ``plot`` command)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ORIGIN_COLORS = {"seed": "tab:gray", "improve": "tab:blue", "specialize": "tab:orange",
                 "generalize": "tab:green", "simplify": "tab:purple"}


def plot_prompt_lineage(records: list[dict[str, Any]], path: str | Path) -> Path:
    """Draw each variant at (generation, mean credit), edges to its parent, size by uses.

    *records* are :meth:`PromptPool.to_records` dicts (as the run store keeps them).
    Retired variants are drawn hollow.  Returns the written path.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    path = Path(path)
    by_id = {int(r["id"]): r for r in records}
    depth: dict[int, int] = {}

    def generation(vid: int) -> int:
        seen = []
        cur = vid
        while cur in by_id and by_id[cur].get("parent_id") is not None and cur not in seen:
            seen.append(cur)
            cur = int(by_id[cur]["parent_id"])
        return len(seen)

    def credit(rec: dict[str, Any]) -> float:
        if "mean_credit" in rec:
            return float(rec["mean_credit"])
        n = rec.get("credited", 0)
        return float(rec.get("credit_sum", 0.0)) / n if n else 0.0

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for vid, rec in by_id.items():
        depth[vid] = generation(vid)
    for vid, rec in by_id.items():
        pid = rec.get("parent_id")
        if pid is not None and int(pid) in by_id:
            ax.plot([depth[int(pid)], depth[vid]], [credit(by_id[int(pid)]), credit(rec)],
                    color="0.75", lw=1, zorder=1)
    for origin, color in ORIGIN_COLORS.items():
        for retired in (False, True):
            pts = [r for r in by_id.values() if r.get("origin", "seed") == origin and bool(r.get("retired")) == retired]
            if not pts:
                continue
            ax.scatter([depth[int(r["id"])] for r in pts], [credit(r) for r in pts],
                       s=[30 + 40 * r.get("uses", 0) ** 0.5 for r in pts],
                       facecolors="none" if retired else color, edgecolors=color, zorder=2,
                       label=f"{origin}{' (retired)' if retired else ''}")
    for vid, rec in by_id.items():
        ax.annotate(str(vid), (depth[vid], credit(rec)), textcoords="offset points", xytext=(5, 4), fontsize=7)
    ax.set_xlabel("generation (rewrites from a seed variant)")
    ax.set_ylabel("mean credit (log improvement over parent)")
    ax.set_title(f"Prompt variants: {len(by_id)} ({sum(1 for r in by_id.values() if r.get('origin') != 'seed')} evolved)")
    if by_id:
        ax.legend(fontsize=7, loc="best")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
