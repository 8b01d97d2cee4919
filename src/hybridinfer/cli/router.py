"""``hybridinfer router``: train the learned router and score routers on outcome data."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import orjson

from hybridinfer.cli.output import cli_errors
from hybridinfer.errors import ConfigError
from hybridinfer.route.learned import (
    CHOICE_SETS,
    FeatureTable,
    LearnedRouter,
    bundled_router_path,
    choice_sets,
)
from hybridinfer.routertraining.deferral import (
    curve_metrics,
    deferral_curve,
    length_scores,
    paired_apgr_difference,
    random_scores,
)
from hybridinfer.routertraining.embedding import open_embedder
from hybridinfer.routertraining.fingerprint import seen_in_training
from hybridinfer.routertraining.outcomes import (
    STRONG_COLUMN,
    WEAK_COLUMN,
    default_data_dir,
    load_outcomes_dir,
    open_outcomes_csv,
)

_MODELS_DIR = click.option(
    "--models-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".hybridinfer/models"),
    envvar="HYBRIDINFER_MODELS_DIR",
    show_default=True,
    help="Built models; the MiniLM embedder is exported here if it is missing.",
)


_DATA_DIR = click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=default_data_dir,
    envvar="HYBRIDINFER_ROUTER_DATA_DIR",
    show_default="../shared/data/routellm-mmlu beside the repository",
    help="RouteLLM MMLU folder: responses/*.csv and contaminated_prompts.jsonl.",
)


@click.group()
def router() -> None:
    """Train and evaluate the learned router (weak local model vs strong cloud model)."""


@router.command("eval")
@click.option(
    "--data",
    "data_file",
    required=True,
    type=click.Path(path_type=Path),
    help="CSV (or TSV, semicolon-separated, JSON Lines, a JSON array; gzip or not) with a "
    "`prompt` column and a True/False column per model.",
)
@click.option(
    "--prompt-col", default=None, help="The prompt's column. Default: `prompt`, in any case."
)
@click.option(
    "--weak-col",
    default=None,
    help=f"Weak model correct? Default: the column named like {WEAK_COLUMN!r} (any case, with "
    "or without the organisation), else the less accurate of exactly two True/False columns.",
)
@click.option(
    "--strong-col",
    default=None,
    help=f"Strong model correct? Default: the column named like {STRONG_COLUMN!r}, else the "
    "more accurate of exactly two True/False columns.",
)
@click.option(
    "--keep-contaminated",
    is_flag=True,
    help="Keep prompts listed in a contaminated_prompts.jsonl beside the CSV (dropped by "
    "default, as RouteLLM's evaluation does).",
)
@click.option(
    "--model",
    "artifact",
    type=click.Path(path_type=Path),
    default=None,
    help="Router artifact (JSON); default the bundled MMLU router.",
)
@_MODELS_DIR
def evaluate(
    data_file: Path,
    prompt_col: str | None,
    weak_col: str | None,
    strong_col: str | None,
    keep_contaminated: bool,
    artifact: Path | None,
    models_dir: Path,
) -> None:
    """Print APGR, CPT(50 %), CPT(80 %) and the strong share at 95 % quality as JSON.

    Shares are fractions of prompts sent to the strong model. Baselines: `random` (seeded) and
    `length` (longer prompts to the strong model first). `learned_vs_length` is the learned
    router's APGR less length's with a 95 % paired bootstrap interval over the prompts, and
    whether the learned router is `above`, `level` with or `below` length on this file.
    `data.seen_in_training` counts the file's prompts the learned router was trained on (when
    its card keeps their digests); any at all adds a `warning`, also printed to stderr.
    """
    with cli_errors():
        table = open_outcomes_csv(
            data_file,
            weak_col,
            strong_col,
            drop_contaminated=not keep_contaminated,
            prompt_column=prompt_col,
        )
        outcomes = table.outcomes
        learned = LearnedRouter.load(artifact or bundled_router_path())
        embedder = open_embedder(models_dir, learned.embedder)
        learned.check_embedder(embedder)
        started = time.perf_counter()
        scores = {
            "random": random_scores(len(outcomes)),
            "length": length_scores(outcomes.prompts),
            "learned": learned.score(outcomes.prompts, embedder),
        }
        report: dict[str, Any] = {
            "data": {
                "file": str(data_file),
                "rows": len(outcomes),
                "weak_column": table.weak_column,
                "strong_column": table.strong_column,
                "columns_found_by": table.found_by,
                "contaminated_dropped": table.contaminated_dropped,
                "unknown_dropped": table.unknown_dropped,
                "encoding": table.encoding,
                "weak_quality": round(float(outcomes.weak.mean()), 4),
                "strong_quality": round(float(outcomes.strong.mean()), 4),
                "seconds": round(time.perf_counter() - started, 2),
            }
        }
        fingerprint = learned.card.get("training_data", {}).get("prompts")
        if fingerprint is not None:
            seen = int(seen_in_training(fingerprint, outcomes.prompts).sum())
            report["data"]["seen_in_training"] = seen
            if seen:
                report["warning"] = (
                    f"{seen} of {len(outcomes)} prompts were in the learned router's training "
                    "data: its figures on this file are in-sample and flatter it"
                )
                click.echo(f"warning: {report['warning']}", err=True)
        for name, score in scores.items():
            report[name] = curve_metrics(deferral_curve(score, outcomes.weak, outcomes.strong))
        paired = paired_apgr_difference(
            scores["learned"], scores["length"], outcomes.weak, outcomes.strong
        )
        if paired is not None:
            report["learned_vs_length"] = paired.summary()
    click.echo(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())


_OUT = click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the router artifact (JSON).",
)


def _folds(default: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option("--folds", default=default, show_default=True, type=click.IntRange(2, 20))


@router.command("train")
@_DATA_DIR
@_OUT
@_folds(4)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Reuse prompt embeddings stored here (embedding all of MMLU takes minutes).",
)
@click.option(
    "--embed-words",
    default=32,
    show_default=True,
    type=click.IntRange(0, 10_000),
    help="Embed only each prompt's first words, as the live scorer does (0: the whole prompt).",
)
@_MODELS_DIR
def train(
    data_dir: Path,
    out: Path,
    folds: int,
    cache_dir: Path | None,
    embed_words: int,
    models_dir: Path,
) -> None:
    """Train the router from DATA_DIR only, choosing its recipe by robust APGR on held-out
    subject groups (subjects sharing a prompt are one group) and held-out MMLU categories."""
    from hybridinfer.routertraining.calibration import calibration
    from hybridinfer.routertraining.training import train_router

    def progress(message: str) -> None:
        click.echo(message, file=sys.stderr)

    with cli_errors():
        if not data_dir.is_dir():
            raise ConfigError(f"{data_dir}: no such data folder")
        outcomes = load_outcomes_dir(data_dir)
        embedder = open_embedder(models_dir)
        progress(f"embedding {len(outcomes)} prompts with {embedder.name}")
        words = embed_words or None
        # Every feature set a candidate may read, and each prompt once more without its answer
        # choices: what the stems recipes train on and the selection's format-shift folds score.
        table = FeatureTable.compute(
            outcomes.prompts,
            embedder,
            cache_dir,
            embed_words=words,
            choices=CHOICE_SETS,
            stems=True,
        )
        learned = train_router(table, outcomes, folds=folds, progress=progress, embed_words=words)
        learned.embedder = {"name": embedder.name, "sha256": embedder.sha256}
        learned.card["training_data"]["source"] = data_dir.name
        learned.card["calibration"] = calibration(learned, table, outcomes.prompts)
        learned.save(out)
    recipe = {"artifact": str(out), "recipe": learned.card["recipe"]["label"]}
    click.echo(orjson.dumps({**recipe, **learned.card["metrics"]}, option=_INDENT).decode())


_INDENT = orjson.OPT_INDENT_2


@router.command("train-difficulty")
@click.option(
    "--prompts",
    "prompts_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Labelled prompts (YAML lists 'easy' and 'hard'); the packaged chat set by default.",
)
@_OUT
@_folds(5)
@_MODELS_DIR
def train_difficulty(prompts_path: Path | None, out: Path, folds: int, models_dir: Path) -> None:
    """Train the chat difficulty head (P(a prompt needs the strong tier)) on labelled prompts,
    choosing its recipe by cross-validated log loss."""
    from hybridinfer.routertraining.difficultyhead import (
        EMBED_WORDS,
        default_prompts_path,
        load_labelled,
        train_difficulty_head,
    )

    def progress(message: str) -> None:
        click.echo(message, file=sys.stderr)

    with cli_errors():
        data = load_labelled(prompts_path or default_prompts_path())
        embedder = open_embedder(models_dir)
        progress(f"embedding {len(data.prompts)} prompts with {embedder.name}")
        table = FeatureTable.compute(data.prompts, embedder, embed_words=EMBED_WORDS)
        head = train_difficulty_head(table, data, folds=folds, progress=progress)
        head.embedder = {"name": embedder.name, "sha256": embedder.sha256}
        head.save(out)
    summary = {"artifact": str(out), **head.card["recipe"], **head.card["metrics"]}
    summary.pop("per_fold")
    click.echo(orjson.dumps(summary, option=orjson.OPT_INDENT_2).decode())


@router.command("calibrate")
@_DATA_DIR
@click.option(
    "--artifact",
    required=True,
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="The router artifact (JSON) whose card gets the calibration.",
)
@click.option("--sample", default=3000, show_default=True, type=click.IntRange(100, 100_000))
@click.option("--seed", default=0, show_default=True, type=int)
@_MODELS_DIR
def calibrate(data_dir: Path, artifact: Path, sample: int, seed: int, models_dir: Path) -> None:
    """Store the quantiles serving reads scores against (a sample of DATA_DIR's prompts)."""
    import numpy as np

    from hybridinfer.routertraining.calibration import calibration

    with cli_errors():
        outcomes = load_outcomes_dir(data_dir)
        rows = np.random.default_rng(seed).permutation(len(outcomes))[:sample]
        prompts = [outcomes.prompts[int(row)] for row in sorted(rows)]
        learned = LearnedRouter.load(artifact)
        embedder = open_embedder(models_dir, learned.embedder)
        click.echo(f"scoring {len(prompts)} prompts with {embedder.name}", err=True)
        table = FeatureTable.compute(
            prompts,
            embedder,
            embed_words=learned.embed_words,
            embed="embedding" in learned.features,
            choices=choice_sets(learned.features),
        )
        learned.card["calibration"] = calibration(learned, table, prompts)
        learned.save(artifact)
    click.echo(orjson.dumps({"artifact": str(artifact), "prompts": len(prompts)}).decode())
