"""MMLU's subjects grouped in its four categories (STEM, humanities, social sciences, other).

Leaving a whole category out (all of STEM, say) is a larger shift than leaving random subjects
out: the closest this data has to "another domain". The mapping is MMLU's own
(``categories.py`` of hendrycks/test): subject -> subcategory -> category.
"""

from __future__ import annotations

_SUBCATEGORY = {
    "abstract_algebra": "math",
    "anatomy": "health",
    "astronomy": "physics",
    "business_ethics": "business",
    "clinical_knowledge": "health",
    "college_biology": "biology",
    "college_chemistry": "chemistry",
    "college_computer_science": "computer science",
    "college_mathematics": "math",
    "college_medicine": "health",
    "college_physics": "physics",
    "computer_security": "computer science",
    "conceptual_physics": "physics",
    "econometrics": "economics",
    "electrical_engineering": "engineering",
    "elementary_mathematics": "math",
    "formal_logic": "philosophy",
    "global_facts": "other",
    "high_school_biology": "biology",
    "high_school_chemistry": "chemistry",
    "high_school_computer_science": "computer science",
    "high_school_european_history": "history",
    "high_school_geography": "geography",
    "high_school_government_and_politics": "politics",
    "high_school_macroeconomics": "economics",
    "high_school_mathematics": "math",
    "high_school_microeconomics": "economics",
    "high_school_physics": "physics",
    "high_school_psychology": "psychology",
    "high_school_statistics": "math",
    "high_school_us_history": "history",
    "high_school_world_history": "history",
    "human_aging": "health",
    "human_sexuality": "culture",
    "international_law": "law",
    "jurisprudence": "law",
    "logical_fallacies": "philosophy",
    "machine_learning": "computer science",
    "management": "business",
    "marketing": "business",
    "medical_genetics": "health",
    "miscellaneous": "other",
    "moral_disputes": "philosophy",
    "moral_scenarios": "philosophy",
    "nutrition": "health",
    "philosophy": "philosophy",
    "prehistory": "history",
    "professional_accounting": "other",
    "professional_law": "law",
    "professional_medicine": "health",
    "professional_psychology": "psychology",
    "public_relations": "politics",
    "security_studies": "politics",
    "sociology": "culture",
    "us_foreign_policy": "politics",
    "virology": "health",
    "world_religions": "philosophy",
}
_CATEGORY = {
    **dict.fromkeys(
        ("physics", "chemistry", "biology", "computer science", "math", "engineering"), "stem"
    ),
    **dict.fromkeys(("history", "philosophy", "law"), "humanities"),
    **dict.fromkeys(
        ("politics", "culture", "economics", "geography", "psychology"), "social_sciences"
    ),
    **dict.fromkeys(("other", "business", "health"), "other"),
}
CATEGORIES = ("stem", "humanities", "social_sciences", "other")


def category(group: str) -> str:
    """The MMLU category of a subject, or of a joined group (``a+b``: both share one)."""
    found = {_CATEGORY[_SUBCATEGORY[subject]] for subject in group.split("+")}
    if len(found) != 1:
        raise ValueError(f"group {group!r} spans categories {sorted(found)}")
    return found.pop()


def known_categories(groups: list[str]) -> list[str] | None:
    """Each group's category, or ``None`` when some group is not an MMLU subject."""
    if not all(subject in _SUBCATEGORY for group in set(groups) for subject in group.split("+")):
        return None
    return [category(group) for group in groups]
