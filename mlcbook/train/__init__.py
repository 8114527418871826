"""``mb.train``: training on the graph IR — gradients, losses, optimizers, a compiled step."""

from . import grad_rules, grad_rules_nn  # noqa: F401 - they register the gradient rules
from .autodiff import (backward, grad, gradient_rule, has_gradient, lift_weights,
                       register_gradient, unregister_gradient)

__all__ = ["backward", "grad", "gradient_rule", "has_gradient", "lift_weights",
           "register_gradient", "unregister_gradient"]
