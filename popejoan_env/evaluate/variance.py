"""Narrower intervals at the same deals: a regression control variate on top of duplicate play.

Duplicate play already removes the luck of the cards at the root: every entrant plays every hand of a
deal, so the deal's chance term (AIVAT's correction at chance nodes) cancels exactly.  What is left of a
margin's spread is how the players' play meets each deal.  Deals on which play matters much tend to show
it for other pairs too, so the margins of **reference pairs** of fast scripted players on the same deals
(``REFERENCE_PAIRS``) are control variates: with ``c_d`` their margins on deal ``d`` and ``mu`` their means
over the deal distribution, measured once on ``MEAN_DEALS`` other deals (``REFERENCE_MEANS``, by
``measure_means``),

    estimate = mean(m) - beta . (mean(c) - mu),    beta = Cov(c)^-1 Cov(c, m)   (least squares over the deals),

which has the mean of ``m`` whatever ``beta`` is, since ``c - mu`` has mean zero (``beta`` fitted on the
same deals adds a bias of order 1/deals, far below the interval).  Its 95% half-width is the Student-t
interval of the residuals ``m - beta . c`` plus the uncertainty of ``mu`` (``beta . se(mu)``, in
quadrature).  The figures it gives (``docs/evaluation.md``) are measured, and modest: duplicate has taken
the large part already.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from popejoan_env.errors import PopeJoanError
from popejoan_env.tournament import run_duplicate, t_quantile_975

REFERENCE_PAIRS: tuple[tuple[str, str], ...] = (("stops_first", "random"), ("lowest", "random"),
                                                ("pool_hunter", "lowest"))
"""The reference pairs whose per-deal margins are the control variates (fast, about 12 ms a deal each)."""
METHOD = "regression control variate on the margins of " + ", ".join(f"{a}-{b}" for a, b in REFERENCE_PAIRS)
"""How the report names the estimator."""
MEAN_SEED = 8_000_000
"""The seed of the deals the reference means are measured on (not the evaluation set's)."""
MEAN_DEALS = 10_000
"""Deals the reference means are measured on."""
REFERENCE_MEANS: dict[tuple[str, int], tuple[tuple[float, float], ...]] = {
    # measure_means("modern", 4): 10,000 deals of seed MEAN_SEED
    ("modern", 4): ((1.933475, 0.0431301412975466), (-0.2406, 0.04161659053863983), (2.45675, 0.04484548812902534)),
}
"""Per (preset, seats): each reference pair's mean margin and its standard error, from ``measure_means``."""


def measure_means(preset: str, seats: int, *, deals: int = MEAN_DEALS, seed: int = MEAN_SEED,
                  workers: int = 1) -> tuple[tuple[float, float], ...]:
    """Each reference pair's mean margin per deal and its standard error, on ``deals`` deals of ``seed``."""
    out = []
    for a, b in REFERENCE_PAIRS:
        m = run_duplicate([a, b], deals=deals, seed=seed, rules=preset, seats=seats, lineups="field",
                          workers=workers).pair[0, 1]
        out.append((float(m.mean()), float(m.std(ddof=1) / math.sqrt(len(m)))))
    return tuple(out)


def controlled(margin: np.ndarray, covariates: np.ndarray, means: np.ndarray,
               mean_se: np.ndarray) -> dict[str, float]:
    """The control-variate estimate of the mean margin and its 95% half-width (see the module's docstring).

    ``margin``: [deals]; ``covariates``: [deals, k]; ``means``, ``mean_se``: [k].
    """
    m = np.asarray(margin, dtype=np.float64)
    c = np.asarray(covariates, dtype=np.float64).reshape(len(m), -1)
    n, k = c.shape
    if n <= k + 2:
        raise PopeJoanError(f"a control variate with {k} covariates needs more than {k + 2} deals, got {n}")
    cc = c - c.mean(axis=0)
    beta, *_ = np.linalg.lstsq(cc, m - m.mean(), rcond=None)
    estimate = float(m.mean() - beta @ (c.mean(axis=0) - means))
    residual = m - cc @ beta
    sampling = t_quantile_975(n - 1 - k) * float(residual.std(ddof=1 + k)) / math.sqrt(n)
    from_means = 1.959963984540054 * float(np.sqrt(np.sum((beta * mean_se) ** 2)))
    return {"mean": estimate, "ci95": math.hypot(sampling, from_means), "beta": beta.tolist()}


def references(preset: str, seats: int) -> tuple[tuple[str, str], ...]:
    """The reference pairs to play alongside an evaluation: all, when their means are known for this table."""
    return REFERENCE_PAIRS if (preset, seats) in REFERENCE_MEANS else ()


def section(state: Any) -> dict[str, Any]:
    """The report's ``variance_reduction`` section: per opponent, the controlled margin and how much narrower its
    interval is than the plain one.  The covariates: the reference pairs' margins (when their means are measured for
    this table) and, with ``--aivat``, the margin's AIVAT correction (``aivat``: mean exactly 0).  None when there
    are neither."""
    settings = state.settings
    known_means = (settings.preset, settings.seats) in REFERENCE_MEANS
    with_aivat = bool(getattr(settings, "aivat", False))
    if not known_means and not with_aivat:
        return {"variance_reduction": None}
    from popejoan_env.evaluate.runner import pair_key
    from popejoan_env.tournament import mean_ci

    known = REFERENCE_MEANS.get((settings.preset, settings.seats), ())
    pairs = REFERENCE_PAIRS if known_means else ()
    means = np.array([mu for mu, _ in known])
    mean_se = np.array([se for _, se in known])
    deals = len(state.series(settings.opponents[0])["margin"])
    cov = np.stack([state.series(pair_key(a, b))["margin"] for a, b in pairs], axis=1) if pairs else \
        np.zeros((deals, 0))
    rows, margins, fixes = [], [], []
    for name in settings.opponents:
        series = state.series(name)
        m = series["margin"]
        margins.append(m)
        plain = mean_ci(m)[1]
        # A reference pair that is this very match (the agent is one of the scripted players) is left out: it
        # would hand over the 10,000 deals of its measured mean, not narrow the interval of these deals.
        keep = np.array([{a, b} != {settings.agent, name} for a, b in pairs], dtype=bool)
        c, mu, se = cov[:, keep], means[keep] if pairs else means, mean_se[keep] if pairs else mean_se
        names = [pair_key(a, b) for (a, b), k in zip(pairs, keep) if k]
        fix = series.get("aivat")
        fixes.append(fix if fix is not None else np.zeros(len(m)))
        if fix is not None and np.ptp(fix) > 0:  # deterministic players: no correction, no covariate
            c, mu, se = np.column_stack([c, fix]), np.append(mu, 0.0), np.append(se, 0.0)
            names.append("aivat")
        cv = controlled(m, c, mu, se) if names else {"mean": float(m.mean()), "ci95": plain, "beta": []}
        rows.append({"opponent": name, "margin": {"mean": cv["mean"], "ci95": cv["ci95"]}, "plain_ci95": plain,
                     "narrowing": plain / cv["ci95"] if cv["ci95"] > 0 else math.nan, "beta": cv["beta"],
                     "covariates": names})
    apart = np.array([settings.agent not in (a, b) for a, b in pairs], dtype=bool)  # none of the agent's matches
    c, mu, se = cov[:, apart], means[apart] if pairs else means, mean_se[apart] if pairs else mean_se
    fix = np.mean(fixes, axis=0)
    if with_aivat and np.ptp(fix) > 0:
        c, mu, se = np.column_stack([c, fix]), np.append(mu, 0.0), np.append(se, 0.0)
    panel_plain = mean_ci(np.mean(margins, axis=0))[1]
    panel = controlled(np.mean(margins, axis=0), c, mu, se) if c.shape[1] else \
        {"mean": float(np.mean(margins)), "ci95": panel_plain}
    from popejoan_env.evaluate import aivat

    method = " and ".join(part for part, on in ((METHOD, known_means), (aivat.METHOD, with_aivat)) if on)
    return {"variance_reduction": {
        "method": method, "reference_means": {pair_key(a, b): {"mean": mu_, "se": se_}
                                              for (a, b), (mu_, se_) in zip(pairs, known)},
        "mean_deals": MEAN_DEALS, "mean_seed": MEAN_SEED,
        "aivat": {"value_function": aivat.VALUE, "method": aivat.METHOD} if with_aivat else None,
        "opponents": rows,
        "panel_margin": {"mean": panel["mean"], "ci95": panel["ci95"]},
        "panel_plain_ci95": panel_plain,
    }}


def check_unbiased(a: str, b: str, *, repeats: int = 40, deals: int = 100, seed: int = 9_000_000) -> dict[str, Any]:
    """The plain and the controlled estimate of ``a``'s margin over ``b`` (modern, 4 seats) on ``repeats``
    independent sets of ``deals`` deals (seeds ``seed``, ``seed + 1`` ...): their means, spreads and
    intervals, and the mean difference with its standard error (unbiased: within noise of zero)."""
    known = REFERENCE_MEANS[("modern", 4)]
    means, mean_se = np.array([mu for mu, _ in known]), np.array([se for _, se in known])
    from popejoan_env.players import make_player
    from popejoan_env.tournament import mean_ci

    players = {name: make_player(name) for name in {a, b, *(p for pair in REFERENCE_PAIRS for p in pair)}}
    rows = []
    for r in range(repeats):
        def margin(x: str, y: str) -> np.ndarray:
            return run_duplicate([players[x], players[y]], deals=deals, seed=seed + r, lineups="field").pair[0, 1]

        m = margin(a, b)
        cv = controlled(m, np.stack([margin(x, y) for x, y in REFERENCE_PAIRS], axis=1), means, mean_se)
        rows.append((float(m.mean()), mean_ci(m)[1], cv["mean"], cv["ci95"]))
    x = np.array(rows)
    centre = x[:, 0].mean()
    return {"pair": [a, b], "repeats": repeats, "deals": deals, "seed": seed,
            "plain_mean": float(x[:, 0].mean()), "controlled_mean": float(x[:, 2].mean()),
            "difference": float((x[:, 2] - x[:, 0]).mean()),
            "difference_se": float((x[:, 2] - x[:, 0]).std(ddof=1) / math.sqrt(repeats)),
            "plain_sd": float(x[:, 0].std(ddof=1)), "controlled_sd": float(x[:, 2].std(ddof=1)),
            "plain_ci95": float(x[:, 1].mean()), "controlled_ci95": float(x[:, 3].mean()),
            "plain_covered": int((abs(x[:, 0] - centre) <= x[:, 1]).sum()),
            "controlled_covered": int((abs(x[:, 2] - centre) <= x[:, 3]).sum())}


def check_aivat_unbiased(agent: str, opponent: str, *, repeats: int = 40, deals: int = 100,
                         seed: int = 9_100_000, preset: str = "modern", seats: int = 4) -> dict[str, Any]:
    """The plain margin of ``agent`` over ``opponent`` and the margin corrected by the AIVAT covariate alone
    (``controlled``, its mean exactly 0; ``evaluate.aivat``) on ``repeats`` independent sets of ``deals`` deals
    (tournament seeds ``seed``, ``seed + 1`` ..., none of them evaluation deals): their means, spreads and intervals,
    and the mean difference with its standard error (unbiased: within noise of zero); and AIVAT as published (the
    corrections subtracted whole)."""
    from popejoan_env.evaluate.aivat import VALUE, play_deals
    from popejoan_env.players import make_player
    from popejoan_env.rules import Rules
    from popejoan_env.tournament import mean_ci

    rules = Rules.preset(preset)
    one, two = make_player(agent), make_player(opponent)
    rows = []
    for r in range(repeats):
        data = play_deals(one, two, agent, opponent, seed + r, deals, rules, seats)
        m, c = np.array(data["margin"]), np.array(data["aivat"])
        cv = controlled(m, c[:, None], np.zeros(1), np.zeros(1)) if np.ptp(c) > 0 else \
            {"mean": float(m.mean()), "ci95": mean_ci(m)[1]}
        rows.append((float(m.mean()), mean_ci(m)[1], cv["mean"], cv["ci95"], float(np.mean(m - c)),
                     mean_ci(m - c)[1]))
    x = np.array(rows)
    centre = x[:, 0].mean()
    difference = x[:, 2] - x[:, 0]
    return {"pair": [agent, opponent], "repeats": repeats, "deals": deals, "seed": seed, "value": VALUE,
            "plain_mean": float(x[:, 0].mean()), "corrected_mean": float(x[:, 2].mean()),
            "difference": float(difference.mean()),
            "difference_se": float(difference.std(ddof=1) / math.sqrt(repeats)),
            "plain_sd": float(x[:, 0].std(ddof=1)), "corrected_sd": float(x[:, 2].std(ddof=1)),
            "plain_ci95": float(x[:, 1].mean()), "corrected_ci95": float(x[:, 3].mean()),
            "aivat_as_published_mean": float(x[:, 4].mean()), "aivat_as_published_ci95": float(x[:, 5].mean()),
            "plain_covered": int((abs(x[:, 0] - centre) <= x[:, 1]).sum()),
            "corrected_covered": int((abs(x[:, 2] - centre) <= x[:, 3]).sum())}
