"""Counts in messages, with their noun in the number they need: "1 record", "2 records", "3 policies"."""

from __future__ import annotations


def plural(noun: str) -> str:
    """The English plural of a regular noun, or of a phrase's last word: record -> records, policy -> policies,
    batch -> batches, worker replay -> worker replays."""
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u"):
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    return noun + "s"


def counted(count: int, noun: str) -> str:
    """`count` and `noun`, plural unless the count is 1: counted(1, "record") == "1 record"."""
    return f"{count} {noun if count == 1 else plural(noun)}"


def classes(num_classes: int, named: bool) -> str:
    """A dataset's classes as its index or manifest counts them: "3 classes" when they have names (class folders),
    else the labels' range, which is all that is known of them ("labels 0..6 (no class names)"), or "no labels"."""
    if named:
        return counted(num_classes, "class")
    return f"labels 0..{num_classes - 1} (no class names)" if num_classes else "no labels"
