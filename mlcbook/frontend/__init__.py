"""``mb.frontend``: importers that turn models from other tools into the graph IR.

    >>> mod = mb.from_onnx("model.onnx", batch_size=8)
"""

from .onnx import from_onnx, static_input_names
from .onnx_ops import CONVERTERS
from .quantize import quantize_qdq
from . import onnx_zoo_ops  # noqa: F401 - registers Dropout, Sum, LRN, ConstantOfShape, Shape...
# more converters, by family
from . import onnx_einsum, onnx_index_ops, onnx_resize_ops  # noqa: F401
from . import onnx_recurrent_ops  # noqa: F401 - RNN, GRU, LSTM
from . import onnx_loss_ops, onnx_quant_ops, onnx_tensor_ops  # noqa: F401
from . import onnx_attention, onnx_state_ops  # noqa: F401
from . import onnx_linalg_ops, onnx_placement_ops, onnx_signal_ops  # noqa: F401
from . import onnx_training_ops  # noqa: F401

__all__ = ["from_onnx", "static_input_names", "CONVERTERS", "quantize_qdq"]
