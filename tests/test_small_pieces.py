"""Issue 27, part 2: the expansion layer in small pieces, one validation layer.

The pieces keep every old import path, the library never imports the
experiments, ``@checks`` declares a contract once and the training functions
check it, and the modules and classes of the expansion layer stay small.
"""

import ast
import inspect
import pathlib

import numpy as np
import pytest

import nqf_lite
from nqf_lite._checks import checks, instance, natural, positive
from nqf_lite.book.seeding import seed_of
from nqf_lite.dynamics import training
from nqf_lite.expansion.form import NQF, random_nqf

ROOT = pathlib.Path(nqf_lite.__file__).parent
LIBRARY = ("expansion", "dynamics", "deep", "design")


def test_old_import_paths_still_work():
    from nqf_lite.expansion import TrainingRecord as rec_pkg
    from nqf_lite.expansion.autograd import (
        Expansion,
        ModuleUnits,
        NotSmoothError,
        NotSymmetricError,
        expand_dataset,
        module_units,
        truncation_error,
    )
    from nqf_lite.expansion.form import TrainingRecord, check_realizable

    assert TrainingRecord is rec_pkg is training.TrainingRecord
    assert TrainingRecord is nqf_lite.TrainingRecord
    assert expand_dataset is nqf_lite.expand_dataset
    assert ModuleUnits is nqf_lite.ModuleUnits
    assert module_units is nqf_lite.module_units
    assert Expansion is nqf_lite.Expansion
    assert {NotSmoothError, NotSymmetricError} == {
        nqf_lite.NotSmoothError,
        nqf_lite.NotSymmetricError,
    }
    assert callable(truncation_error) and callable(check_realizable)
    with pytest.raises(AttributeError, match="no_such_name"):
        from nqf_lite.expansion import form

        form.no_such_name  # noqa: B018


def test_every_public_name_of_the_expansion_layer_is_importable():
    import nqf_lite.expansion as ex

    missing = [n for n in ex.__all__ if not hasattr(ex, n)]
    assert not missing
    assert len(ex.__all__) == len(set(ex.__all__))  # no name claimed twice
    assert set(nqf_lite.__all__) <= set(dir(nqf_lite))


def _imports(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_the_library_never_imports_the_experiments_or_the_book():
    offenders = [
        str(path.relative_to(ROOT))
        for layer in LIBRARY
        for path in (ROOT / layer).rglob("*.py")
        if any(
            m.startswith(("nqf_lite.experiments", "nqf_lite.book"))
            for m in _imports(path)
        )
    ]
    assert offenders == []


@pytest.mark.parametrize(
    "path", sorted((ROOT / "expansion").rglob("*.py")), ids=str
)
def test_expansion_modules_and_classes_are_small(path):
    source = path.read_text(encoding="utf-8")
    assert source.count("\n") <= 650, f"{path.name}: split it by idea"
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            size = node.end_lineno - node.lineno + 1
            assert size <= 300, f"{path.name}: class {node.name} is {size}"


def test_checks_converts_and_names_the_argument():
    @checks(lr=positive, steps=natural)
    def run(x, lr=0.1, *, steps=3):
        return x, lr, steps

    assert run(1, np.float32(0.5), steps=np.int64(2)) == (1, 0.5, 2)
    assert type(run(1)[2]) is int
    with pytest.raises(TypeError, match="lr must be a positive number"):
        run(1, "fast")
    with pytest.raises(ValueError, match="steps must be a non-negative"):
        run(1, steps=-1)
    assert inspect.signature(run).parameters["lr"].default == 0.1
    assert run.__checks__ == {"lr": positive, "steps": natural}


def test_checks_refuses_a_contract_on_an_unknown_argument():
    with pytest.raises(TypeError, match=r"has no argument\(s\) \['rate'\]"):

        @checks(rate=positive)
        def run(lr):
            return lr


def test_training_functions_refuse_anything_but_an_nqf():
    model = random_nqf(m=4, p=3, seed=seed_of("small pieces", "refuse"))
    W = np.ones((3, 2))
    y = np.zeros(4)
    for fn, args in (
        (training.gd_step, (W, y, 0.1)),
        (training.train, (W, y, 0.1, 2)),
        (training.closed_step, (W @ W.T, W.sum(1), 2, y, 0.1)),
        (training.train_closed, (W @ W.T, W.sum(1), 2, y, 0.1, 2)),
    ):
        with pytest.raises(TypeError, match="nqf must be an instance of NQF"):
            fn(model.A, *args)
    with pytest.raises(TypeError, match=r"must be an instance of int"):
        instance(int)("k", 1.5)


def test_nqf_methods_are_the_training_functions():
    rng = np.random.default_rng(seed_of("small pieces", "delegate"))
    model = random_nqf(m=5, p=3, scale_g=0.3, scale_B=0.2, seed=rng)
    W = 0.1 * rng.standard_normal((3, 4))
    y = rng.standard_normal(5)
    M, mu = W @ W.T, W.sum(axis=1)
    assert isinstance(model, NQF)
    np.testing.assert_array_equal(
        model.gd_step(W, y, 0.05), training.gd_step(model, W, y, 0.05)
    )
    for a, b in zip(
        model.closed_step(M, mu, 4, y, 0.05),
        training.closed_step(model, M, mu, 4, y, 0.05),
    ):
        np.testing.assert_array_equal(a, b)
    rec = model.train(W, y, 0.05, 3, record="loss")
    np.testing.assert_array_equal(
        rec.loss, training.train(model, W, y, 0.05, 3, record="loss").loss
    )
    (_, preds) = model.train_closed(M, mu, 4, y, 0.05, 3)
    np.testing.assert_array_equal(
        preds, training.train_closed(model, M, mu, 4, y, 0.05, 3)[1]
    )
