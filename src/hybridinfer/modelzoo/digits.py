"""Handwritten digit models (8x8 images, 64 pixels of 0..16): a deliberately weak PCA +
logistic regression, and an RBF support vector machine. Both read all 64 pixels."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.calibration import CalibratedClassifierCV
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.svm import SVC

OPSET = 17
N_PIXELS = 64
SMALL_COMPONENTS = 8  # ~0.90 accuracy: weak enough that a cascade has something to fix

SMALL_DESCRIPTION = (
    f"PCA to {SMALL_COMPONENTS} components and multinomial logistic regression on the 64 "
    "pixels of an 8x8 digit: tiny and fast, noticeably less accurate."
)
LARGE_DESCRIPTION = (
    "RBF-kernel support vector machine (C=10) with sigmoid-calibrated probabilities on the "
    "64 pixels of an 8x8 digit: the accurate digit model."
)


def train_small(
    x: NDArray[np.float32], y: NDArray[np.int64], weights: NDArray[np.float64]
) -> Pipeline:
    """Fit PCA + logistic regression (deterministic: full SVD, lbfgs).

    ``weights`` is accepted for a uniform interface; digit labels are all equally certain.
    """
    model = Pipeline(
        [
            ("pca", PCA(n_components=SMALL_COMPONENTS, svd_solver="full")),
            ("classifier", LogisticRegression(max_iter=2000)),
        ]
    )
    return model.fit(x, y)


def train_large(
    x: NDArray[np.float32], y: NDArray[np.int64], weights: NDArray[np.float64]
) -> Pipeline:
    """Fit the RBF SVM (``weights`` unused, as for the small model).

    ``SVC(probability=True)`` is deprecated since scikit-learn 1.9; calibrating the SVM with
    ``CalibratedClassifierCV(ensemble=False)`` is its documented replacement.
    """
    classifier = CalibratedClassifierCV(
        SVC(C=10.0, gamma="scale"), method="sigmoid", cv=5, ensemble=False
    )
    model = Pipeline([("classifier", classifier)])
    return model.fit(x, y)


def model_params(model: Pipeline) -> dict[str, str | int | float]:
    """What the card records about a fitted digit model."""
    params: dict[str, str | int | float] = {"opset": OPSET}
    for name, step in model.steps:
        kind = type(step).__name__
        if isinstance(step, CalibratedClassifierCV):
            kind += f"({type(step.estimator).__name__})"
        params[name] = kind
    if "pca" in model.named_steps:
        pca = model.named_steps["pca"]
        params["pca_components"] = int(pca.n_components_)
        params["pca_explained_variance"] = round(float(pca.explained_variance_ratio_.sum()), 4)
    return params


def to_onnx(model: Pipeline) -> Any:
    """Convert a fitted digit pipeline to an ``onnx.ModelProto`` (input ``pixels`` [N, 64])."""
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType

    with warnings.catch_warnings():
        # skl2onnx's SVM converter reads SVC.probA_/probB_, deprecated in scikit-learn 1.9;
        # a calibrated SVC never uses them, and the build checks the exported probabilities.
        warnings.filterwarnings(
            "ignore", message="Attribute `prob[AB]_` was deprecated", category=FutureWarning
        )
        return convert_sklearn(
            model,
            initial_types=[("pixels", FloatTensorType([None, N_PIXELS]))],
            options={id(model.steps[-1][1]): {"zipmap": False}},
            target_opset=OPSET,
        )
