"""The input tuner's report: its settings now, then every decision in order with its evidence, its prediction and
what the next window measured."""

from __future__ import annotations

from tfliquid.keras.tuner.levers import Settings


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _line(decision: dict) -> str:
    action, epoch = decision["action"], decision["epoch"]
    head = f"epoch {epoch}: "
    if action == "diagnose":
        return head + f"{decision['diagnosis']}: {decision['evidence']}"
    if action == "apply":
        return head + (
            f"apply {decision['lever']} ({decision['change']}): predicted "
            f"{_rate(decision['predicted_images_per_second'])} images/s against "
            f"{_rate(decision['before_images_per_second'])}; {decision['evidence']}"
        )
    if action in ("keep", "roll back"):
        before, measured = decision["before_images_per_second"], decision["measured_images_per_second"]
        predicted = decision["predicted_images_per_second"]
        return head + (
            f"{action} {decision['lever']}: measured {measured:.0f} images/s, {measured / before:.2f}x the "
            f"{before:.0f} before it (predicted {predicted / before:.2f}x; {decision['rule']})"
        )
    if action == "raise":
        return (
            head + f"raise the scan group ({decision['change']}): the similarity test accepts no lower one "
            f"({decision['evidence']})"
        )
    if action == "steady":
        return head + f"steady: {decision['why']}"
    if action == "advise":
        return head + f"not in the tuner's reach: {decision['why']}"
    if action == "settle":
        return head + f"{decision['lever']}: {decision['why']}; judged on the next window"
    return head + f"{action} {decision['lever']}: {decision['why']}"


def report(tuner) -> str:
    """Readable: the settings, the last window, and the decisions."""
    settings: Settings = tuner.settings
    lines = [
        f"InputTuner on {tuner.path}: scan group {settings.scan_group} of {tuner.full_fidelity}, prep threads "
        f"{settings.prep_parallelism or 'AUTOTUNE'}, reads {settings.read_parallelism or 'AUTOTUNE'}, cache "
        f"{settings.cache_bytes:,} bytes, decode size {settings.decode_size or 'each image its own'}"
        + (", on tf.data service workers" if settings.service else "")
    ]
    if tuner.windows:
        last = tuner.windows[-1]
        lines.append(
            f"  last window (epoch {last.epoch}): {last.rate:.0f} images/s, {last.stall:.0%} waiting for input"
        )
    lines += [f"  {_line(decision)}" for decision in tuner.decisions]
    return "\n".join(lines)
