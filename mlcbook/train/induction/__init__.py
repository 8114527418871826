"""``mb.train.induction``: learn from training runs which structure to start a new problem
from.

- :mod:`.problems`: the datasets scikit-learn bundles and seeded synthetic families;
- :mod:`.features`: a problem's features, and the structure pattern (op motifs) of an IR;
- :mod:`.structures`: the candidate starting structures, and the interpreted trainer;
- :mod:`.corpus`: runs of the training-aware runtime (growth on plateaus) recorded as data;
- :mod:`.model`: boosted trees from problem features + a start's IR motifs to its score;
- :mod:`.proposal`: ``propose(problem)``: the candidates ranked, with reasons and a
  growth policy.

    >>> ranked = mb.train.induction.propose(make("moons", seed=7))
    >>> ranked[0].structure.name, ranked[0].reasons, ranked[0].policy["grow"]
    ('linear', [('log2_params', 0.97), ('nonlinear_gain', 0.07), ...], False)
"""

from .corpus import (SHIPPED, WidenOnPlateau, build_corpus, load_corpus, save_corpus,
                     train_run)
from .features import PROBLEM_FEATURES, problem_features, score, structure_of
from .model import StructureModel, fit, structure_features
from .problems import (BUNDLED, CLASSIFICATION, FAMILIES, REGRESSION, SYNTHETIC, Problem,
                       digits, make, suite, synthetic)
from .proposal import Proposal, growth_policy, propose, rank, shipped_model
from .structures import CANDIDATES, InterpretedTrainer, Structure

__all__ = ["SHIPPED", "WidenOnPlateau", "build_corpus", "load_corpus", "save_corpus",
           "train_run", "PROBLEM_FEATURES", "problem_features", "score", "structure_of",
           "BUNDLED", "CLASSIFICATION", "FAMILIES", "REGRESSION", "SYNTHETIC", "Problem",
           "digits", "make", "suite", "synthetic", "CANDIDATES", "InterpretedTrainer",
           "Structure", "StructureModel", "fit", "structure_features", "Proposal",
           "growth_policy", "propose", "rank", "shipped_model"]
