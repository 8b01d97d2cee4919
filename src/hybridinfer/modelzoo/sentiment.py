"""Tweet sentiment models: a small word TF-IDF + logistic regression, and a larger word + char
n-gram TF-IDF + calibrated linear SVM. Both export to ONNX that onnxruntime runs unaided.

The ONNX graphs compute exactly what scikit-learn computes (the build checks every test row)
only because of these choices, each working around a skl2onnx behaviour:

* Tokens. skl2onnx swaps sklearn's default ``(?u)\\b\\w\\w+\\b`` for ``[a-zA-Z0-9_]+`` (which
  also yields one-letter tokens, so bigrams shift). ``TOKEN_PATTERN`` reads the same in
  Python's ``re`` and in RE2, and keeps apostrophes, "!" and "?", which carry sentiment.
* Bigrams. skl2onnx has to guess how ``"a b"`` splits into tokens and guesses wrong once
  ``max_features`` pruned a part; it is handed token tuples instead (see
  ``_conversion_vocabularies``).
* Characters. sklearn's ``char`` analyzer collapses runs of whitespace before taking n-grams;
  the ONNX tokenizer cannot. ``RawCharTfidfVectorizer`` skips that step, so both sides see
  the same characters.
* Term frequencies. skl2onnx exports ``sublinear_tf`` as ``log(1 + tf)`` where sklearn
  computes ``1 + log(tf)``, so the large model uses ``binary`` term frequencies instead
  (as accurate here: almost every term occurs once per tweet).
* Padding. The ONNX tokenizer pads the short rows of a batch; the pad token is replaced
  so that it can never be part of an n-gram (see ``_PAD_TOKEN``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.calibration import CalibratedClassifierCV
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.svm import LinearSVC

TOKEN_PATTERN = r"[a-zA-Z0-9_']+|[!?]"
OPSET = 17
LOCALE = "C.UTF-8"  # onnxruntime rejects the converter's default locale on most Linux images
SMALL_VOCABULARY = 32_768
LARGE_CHAR_VOCABULARY = 150_000
# Never equal to a real token: the ONNX tokenizer pads short rows of a batch with this
# value, and skl2onnx's default ("#") forms n-grams that exist in the vocabulary (hashtags),
# which made a row's features depend on the other rows of its batch.
_PAD_TOKEN = b"\x00pad\x00"

SMALL_DESCRIPTION = (
    "Word 1-2 gram TF-IDF (32k-term vocabulary) and multinomial logistic regression: "
    "3-class tweet sentiment, fast enough to run on every host."
)
LARGE_DESCRIPTION = (
    "Word 1-2 gram plus character 2-5 gram binary TF-IDF (~200k features) and a linear SVM "
    "trained with annotator-agreement weights and sigmoid-calibrated: the more accurate, "
    "heavier 3-class tweet sentiment model."
)


class RawCharTfidfVectorizer(TfidfVectorizer):  # type: ignore[misc]
    """Character n-gram TF-IDF over the text exactly as given (whitespace not collapsed).

    This mirrors what the ONNX ``Tokenizer`` with ``tokenexp="(?s)."`` produces, so the
    exported graph and scikit-learn agree on every input. Only ``analyzer="char"`` changes.
    """

    def build_analyzer(self) -> Callable[[str], list[str]]:
        """Lower-cased text cut into every character n-gram in ``ngram_range``."""
        if self.analyzer != "char":
            return super().build_analyzer()  # type: ignore[no-any-return]
        preprocess = self.build_preprocessor()
        decode = self.decode
        low, high = self.ngram_range

        def analyze(document: str) -> list[str]:
            text: str = preprocess(decode(document))
            size = len(text)
            return [
                text[start : start + n]
                for n in range(low, min(high, size) + 1)
                for start in range(size - n + 1)
            ]

        return analyze


def train_small(
    x: NDArray[np.object_], y: NDArray[np.int64], weights: NDArray[np.float64]
) -> Pipeline:
    """Fit the small model: sklearn defaults apart from the vocabulary cap and tokens.

    ``weights`` (annotator agreement) are deliberately unused: this is the plain baseline.
    """
    model = Pipeline(
        [
            (
                "tfidf",
                TfidfVectorizer(
                    ngram_range=(1, 2),
                    max_features=SMALL_VOCABULARY,
                    token_pattern=TOKEN_PATTERN,
                    dtype=np.float32,
                ),
            ),
            ("classifier", LogisticRegression(C=1.0, max_iter=1000)),
        ]
    )
    return model.fit(x, y)


def train_large(
    x: NDArray[np.object_], y: NDArray[np.int64], weights: NDArray[np.float64]
) -> Pipeline:
    """Fit the large model, each tweet weighted by its annotators' agreement.

    Chosen by measurement (held-out splits and 3-fold cross-validation on the training
    split, see the card's recipe). Character n-grams add about a
    point over words alone (misspellings, elongated words, emoticons); weighting by
    agreement adds ~0.3 points, since low-agreement labels are noisy. A linear SVM beat
    logistic regression, naive-Bayes-weighted SVMs and small MLPs on the same features and
    trains several times faster; the sigmoid calibration gives it probabilities.
    """
    features = FeatureUnion(
        [
            (
                "words",
                TfidfVectorizer(
                    ngram_range=(1, 2),
                    token_pattern=TOKEN_PATTERN,
                    min_df=2,
                    binary=True,
                    dtype=np.float32,
                ),
            ),
            (
                "chars",
                RawCharTfidfVectorizer(
                    analyzer="char",
                    ngram_range=(2, 5),
                    min_df=3,
                    max_features=LARGE_CHAR_VOCABULARY,
                    binary=True,
                    dtype=np.float32,
                ),
            ),
        ]
    )
    classifier = CalibratedClassifierCV(
        LinearSVC(C=0.3, max_iter=5000, random_state=0),
        method="sigmoid",
        cv=3,
        ensemble=False,
    )
    model = Pipeline([("features", features), ("classifier", classifier)])
    return model.fit(x, y, classifier__sample_weight=weights)


def model_params(model: Pipeline) -> dict[str, str | int | float]:
    """What the card records about a fitted sentiment model."""
    params: dict[str, str | int | float] = {"opset": OPSET, "token_pattern": TOKEN_PATTERN}
    features = model.steps[0][1]
    vectorizers = features.transformer_list if isinstance(features, FeatureUnion) else []
    if not vectorizers:
        vectorizers = [("words", features)]
    for name, vectorizer in vectorizers:
        params[f"{name}_vocabulary"] = len(vectorizer.vocabulary_)
        params[f"{name}_ngram_range"] = "{}-{}".format(*vectorizer.ngram_range)
    classifier = model.steps[-1][1]
    kind = type(classifier).__name__
    if isinstance(classifier, CalibratedClassifierCV):
        kind += f"({type(classifier.estimator).__name__})"
    params["classifier"] = kind
    return params


def to_onnx(model: Pipeline) -> Any:
    """Convert a fitted sentiment pipeline to an ``onnx.ModelProto`` (input ``text`` [N, 1])."""
    from skl2onnx import convert_sklearn, update_registered_converter
    from skl2onnx.common.data_types import StringTensorType
    from skl2onnx.operator_converters.tfidf_vectoriser import convert_sklearn_tfidf_vectoriser
    from skl2onnx.shape_calculators.text_vectorizer import (
        calculate_sklearn_text_vectorizer_output_shapes,
    )

    update_registered_converter(
        RawCharTfidfVectorizer,
        "HybridinferRawCharTfidfVectorizer",
        calculate_sklearn_text_vectorizer_output_shapes,
        convert_sklearn_tfidf_vectoriser,
        options={
            "tokenexp": None,
            "separators": None,
            "nan": [True, False],
            "keep_empty_string": [True, False],
            "locale": None,
        },
    )
    options: dict[Any, dict[str, Any]] = {}
    for vectorizer in _vectorizers(model):
        options[id(vectorizer)] = {"locale": LOCALE}
        if vectorizer.analyzer == "char":
            # "(?s)." makes every character a token, newlines included (RE2's "." skips them).
            options[id(vectorizer)]["tokenexp"] = "(?s)."
    options[id(model.steps[-1][1])] = {"zipmap": False}
    with warnings.catch_warnings(), _conversion_vocabularies(model):
        # skl2onnx warns that char analyzers "may not work"; the build verifies agreement
        # with scikit-learn on the whole test split instead of trusting either way.
        warnings.filterwarnings(
            "ignore", message="The conversion of CountVectorizer may not work", category=UserWarning
        )
        onnx_model = convert_sklearn(
            model,
            initial_types=[("text", StringTensorType([None, 1]))],
            options=options,
            target_opset=OPSET,
        )
    for node in onnx_model.graph.node:
        if node.op_type == "Tokenizer":
            for attribute in node.attribute:
                if attribute.name == "pad_value":
                    attribute.s = _PAD_TOKEN
    return onnx_model


def _vectorizers(model: Pipeline) -> list[TfidfVectorizer]:
    features = model.steps[0][1]
    if isinstance(features, FeatureUnion):
        return [vectorizer for _, vectorizer in features.transformer_list]
    return [features]


@contextmanager
def _conversion_vocabularies(model: Pipeline) -> Iterator[None]:
    """Show skl2onnx each vocabulary in the form it converts correctly, then restore it.

    * Word n-grams become token tuples. Given ``"a b"``, skl2onnx guesses whether it is one
      token or a bigram, and guesses "one token" whenever a part is not itself in the
      vocabulary (common once ``max_features`` prunes it), so that bigram never fires.
      ``TOKEN_PATTERN`` cannot match a space, so splitting on spaces is exact.
    * The mapping is read-only. skl2onnx walks every dict attribute of every estimator,
      calling ``dir()`` on each value: ~10 s on a 200k-term vocabulary. A mapping proxy
      works the same for the converter (lookups, ``items()``) but the walk skips it.
    """
    vectorizers = _vectorizers(model)
    originals = [vectorizer.vocabulary_ for vectorizer in vectorizers]
    # Older scikit-learn keeps the pruned terms in ``stop_words_``; skl2onnx would turn them
    # into stop words of the whole input string. sklearn documents the attribute as safe
    # to delete (it is only informative), so it is hidden during the conversion.
    pruned = [vectorizer.__dict__.pop("stop_words_", None) for vectorizer in vectorizers]
    try:
        for vectorizer, vocabulary in zip(vectorizers, originals, strict=True):
            if vectorizer.analyzer == "word":
                vocabulary = {tuple(term.split(" ")): index for term, index in vocabulary.items()}
            vectorizer.vocabulary_ = MappingProxyType(vocabulary)
        yield
    finally:
        for vectorizer, vocabulary, terms in zip(vectorizers, originals, pruned, strict=True):
            vectorizer.vocabulary_ = vocabulary
            if terms is not None:
                vectorizer.stop_words_ = terms
