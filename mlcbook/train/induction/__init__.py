"""``mb.train.induction``: learn from training runs which structure suits which problem.

- :mod:`.problems`: digits and synthetic teacher-labelled problems of chosen size and
  difficulty;
- :mod:`.features`: a problem's features, and the structure pattern of a model's IR;
- :mod:`.corpus`: training runs (with the rewrite runtime's grow/prune) recorded as data;
- :mod:`.model`: boosted shallow trees from problem + structure to score, read as rules;
- :mod:`.proposal`: ``propose(model, problem)``, and the comparison with random search.

    >>> corpus = build_corpus([synthetic(s) for s in range(4)], [(8,), (32,), (16, 16)])
    >>> sm = fit(corpus); print(sm.rules())
    >>> propose(sm, synthetic(seed=9))
    (32,)
"""

from .corpus import MAX_WIDTH, build_corpus, load_corpus, save_corpus, train_run
from .features import PROBLEM_FEATURES, problem_features, score, structure_of
from .model import FEATURES, StructureModel, fit, structure_features
from .problems import CLASSIFICATION, REGRESSION, Problem, digits, synthetic
from .proposal import CANDIDATES, compare, propose, random_search, rank

__all__ = ["MAX_WIDTH", "build_corpus", "load_corpus", "save_corpus", "train_run",
           "PROBLEM_FEATURES", "problem_features", "score", "structure_of", "FEATURES",
           "StructureModel", "fit", "structure_features", "CLASSIFICATION", "REGRESSION",
           "Problem", "digits", "synthetic", "CANDIDATES", "compare", "propose",
           "random_search", "rank"]
