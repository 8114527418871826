"""A corpus with a known rule, for the model, proposal and evaluation tests: on problems a
linear probe solves (``linear_score`` > 0.8) the shallower a start, the better; on the
others, the deeper the better."""

import numpy as np

from mlcbook.train.induction import Structure

STARTS = [Structure(0), Structure(1, 16), Structure(2, 32, "tanh"),
          Structure(3, 32, residual=True)]


def features(linear, inputs=8):
    return {"log2_samples": 9.0, "inputs": inputs, "outputs": 3, "classification": 1,
            "linear_score": linear, "nonlinear_gain": 0.1, "knn_score": 0.7, "pca90": 0.9,
            "balance": 1.0}


def corpus(families=4, problems=3, seeds=(0, 1)):
    rng = np.random.default_rng(0)
    runs = []
    for f in range(families):
        for p in range(problems):
            # alternately a problem a linear probe solves and one it does not
            linear = float(rng.uniform(0.85, 1.0) if (f + p) % 2 else rng.uniform(0.3, 0.7))
            for seed in seeds:
                for s in STARTS:
                    good = -s.depth if linear > 0.8 else s.depth
                    score = 0.7 + 0.05 * good + rng.normal(0, 0.005)
                    runs.append({"problem": f"f{f}p{p}", "family": f"f{f}", "seed": seed,
                                 "features": features(linear), "structure": s.to_json(),
                                 "name": s.name, "steps": 40, "rewrites": [],
                                 "final": {"widths": [s.width] * s.depth},
                                 "val": {"10": score + rng.normal(0, 0.02), "20": score,
                                         "40": score},
                                 "score": float(score)})
    return runs
