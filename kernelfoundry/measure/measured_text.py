"""Text for a ``measured`` record: per target shape, predicted vs measured, eager, speedup."""

from __future__ import annotations

from typing import Any


def _ms(seconds: Any) -> str:
    return "-" if not isinstance(seconds, (int, float)) else (
        f"{seconds * 1e3:.4g} ms" if seconds >= 1e-4 else f"{seconds * 1e6:.4g} us")


def format_measured(record: dict[str, Any]) -> list[str]:
    """Lines for the ``verify`` report (and logs)."""
    head = (f"device: {record.get('device')} ({record.get('driver')}, torch {record.get('torch_version')}), "
            f"timer {record.get('timer')}, the model's {record.get('k')} fastest configs per shape on "
            f"{record.get('hardware')}")
    if not record.get("passed"):
        return [head, f"  FAIL  {record.get('reason')}"]
    lines = [head, f"  correctness on the device: {record.get('checked')} run(s) match the reference"]
    for s in record.get("shapes", []):
        shape = ", ".join(f"{k}={v}" for k, v in s["shape"].items())
        params = ", ".join(f"{k}={v}" for k, v in s["config"].items())
        ratio = s["predicted_s"] / s["measured_s"]
        lines.append(f"  {{{shape}}}: measured {_ms(s['measured_s'])} (±{100 * s['spread']:.0f}%), predicted "
                     f"{_ms(s['predicted_s'])} ({ratio:.2f}x); eager {_ms(s['eager_measured_s'])} measured, "
                     f"{_ms(s['eager_predicted_s'])} predicted; speedup {s['speedup']:.3g}x; best {params}")
    lines.append(f"measured objective: {record['objective']:.4g} (measured speedup over measured eager PyTorch)")
    return lines
