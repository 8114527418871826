"""``mb.train``: training on the graph IR.

    >>> import mlcbook as mb
    >>> from sklearn.datasets import load_digits      # the course extra installs scikit-learn
    >>> (x, y), (x_test, y_test) = mb.train.digits_split(load_digits())
    >>> model = mb.train.mlp((64, 128, 10), batch=64)
    >>> trainer = mb.train.compile_step(model, loss="cross_entropy",
    ...                                 optimizer=mb.train.SGD(lr=0.1, momentum=0.9),
    ...                                 data=mb.train.Batches(x, y, 64, seed=0))
    >>> losses = trainer.fit(300); trainer.accuracy(x_test, y_test)
    >>> trainer.save("digits.ckpt"); trainer = mb.train.load("digits.ckpt")

An imported model trains the same way; ``training=True`` imports BatchNorm and Dropout in
their training forms, and ``freeze`` keeps layers as they are:

    >>> mod = mb.from_onnx("cnn.onnx", batch_size=64, training=True)
    >>> trainer = mb.train.compile_step(mod, optimizer=mb.train.Adam(1e-3), freeze=["conv1"])
    >>> print(trainer.declared)      # each weight: parameter, buffer or constant, and why

``grad`` differentiates a graph function (each op's rule: :func:`register_gradient`);
losses, optimizers (whose state each parameter owns) and schedules are graph builders;
``compile_step`` compiles forward, backward and update into native kernels.
"""

from . import (grad_rules, grad_rules_grid, grad_rules_layout,  # noqa: F401 - they register
               grad_rules_nn, grad_rules_recurrent, grad_rules_train)  # the gradient rules
from . import rewrite  # noqa: F401 - mb.train.rewrite
from . import induction  # noqa: F401 - mb.train.induction
from .autodiff import (backward, grad, gradient_rule, has_gradient, lift_weights,
                       register_gradient, unregister_gradient)
from .data import Batches, digits_split
from .gradcheck import analytic_gradients, max_gradient_error, numeric_gradient
from .losses import cross_entropy, mse
from .models import cnn, mlp
from .optim import SGD, Adam, AdamW, Optimizer, state_name, state_owner
from .schedules import ConstantLR, Cosine, Schedule, StepLR, Warmup
from .step import StateLink, TrainStep, build_step
from .trainer import Trainer, compile_step, load

__all__ = ["backward", "grad", "gradient_rule", "has_gradient", "lift_weights",
           "register_gradient", "unregister_gradient", "Batches", "digits_split",
           "analytic_gradients", "max_gradient_error", "numeric_gradient", "cross_entropy",
           "mse", "cnn", "mlp", "SGD", "Adam", "AdamW", "Optimizer", "state_name",
           "state_owner", "ConstantLR", "Cosine", "Schedule", "StepLR", "Warmup", "StateLink",
           "TrainStep", "build_step", "Trainer", "compile_step", "load"]
