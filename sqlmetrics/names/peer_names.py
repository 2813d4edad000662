"""Other tools' metric names (trec_eval, ranx, ir_measures) mapped onto sqlmetrics' names.

A pure function of the text: `resolve(name)` says which sqlmetrics metric a peer's name means,
with which conventions, under which output label; it never looks at the registry, so a name
maps the same way whether or not this version has the metric (metric_names.py checks that).

>>> resolve("P_10").names
(PeerName(label='P_10', canonical='precision@10', overrides=(), peer='trec_eval', param=None),)
>>> resolve("ndcg_burges@10-l2").names[0].overrides
(('threshold', 2), ('gain', 'exponential'), ('gain_from_threshold', True))
>>> [n.label for n in resolve("P.20,5").names]
['P_5', 'P_20']
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..errors import UnknownMetricError

Overrides = tuple[tuple[str, object], ...]


@dataclass(frozen=True)
class PeerName:
    label: str  # the output column: the name as typed, or a group member's trec_eval name
    canonical: str | None  # the sqlmetrics name ("precision@10"); None: no equivalent
    overrides: Overrides = ()  # conventions of this metric alone: threshold, gain, ...
    peer: str = "trec_eval"
    param: float | None = None  # the metric's number (set_F's beta; registry.py's `parameter`)


@dataclass(frozen=True)
class Resolved:
    names: tuple[PeerName, ...]
    group: bool = False  # a trec_eval -m group: members without an equivalent are left out


# --- trec_eval ---------------------------------------------------------------------------------
# Its measures in the order it prints them (measures.c, te_trec_measures) and what each is here:
# a template ("{k}" a cutoff, "{r}" a recall level) or None (no equivalent in sqlmetrics).
_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_LEVELS = tuple(i / 10 for i in range(11))
_MULTIPLES = tuple(i / 5 for i in range(1, 11))  # Rprec_mult's: 0.2, 0.4, ..., 2.0
# measures whose cutoffs are fractions, printed "%3.2f" (iprec_at_recall_0.50, Rprec_mult_0.20)
_FRACTIONS = frozenset({"iprec_at_recall", "Rprec_mult"})
TREC_MEASURES: tuple[tuple[str, str | None, tuple | None], ...] = (
    # (name, sqlmetrics template, default cutoffs: None for a measure without cutoffs)
    ("runid", None, None),
    ("num_q", "num_q", None),
    ("num_ret", "num_ret", None),
    ("num_rel", "num_rel", None),
    ("num_rel_ret", "num_rel_ret", None),
    ("map", "map", None),
    ("gm_map", "gm_map", None),
    ("Rprec", "r_precision", None),
    ("bpref", "bpref", None),
    ("recip_rank", "mrr", None),
    ("iprec_at_recall", "iprec_at_recall_{r}", _LEVELS),
    ("P", "precision@{k}", _CUTS),
    ("relstring", "relstring", None),
    ("recall", "recall@{k}", _CUTS),
    ("infAP", "infAP", None),
    ("gm_bpref", "gm_bpref", None),
    ("Rprec_mult", "Rprec_mult", _MULTIPLES),  # Rprec_mult_0.20: Rprec_mult with x = 0.2
    ("utility", "utility", None),
    ("11pt_avg", "11pt_avg", None),
    ("binG", "binG", None),
    ("G", "G", None),
    ("ndcg", "ndcg", None),
    ("ndcg_rel", "ndcg_rel", None),
    ("Rndcg", "Rndcg", None),
    ("ndcg_cut", "ndcg@{k}", _CUTS),
    ("map_cut", "map@{k}", _CUTS),
    ("relative_P", "relative_P@{k}", _CUTS),
    ("success", "hit_rate@{k}", (1, 5, 10)),  # success_k = hit_rate@k
    ("set_P", "set_P", None),
    ("set_relative_P", "set_relative_P", None),
    ("set_recall", "set_recall", None),
    ("set_map", "set_map", None),
    ("set_F", "set_F", None),
    ("num_nonrel_judged_ret", "num_nonrel_judged_ret", None),
    ("rbp", "rbp", None),
    ("rbp_resid", "rbp_resid", None),
    ("unj", "unj@{k}", (5, 10, 20)),
)
_TREC = {name: (template, cuts) for name, template, cuts in TREC_MEASURES}
# trec_eval prints no per-query line for these (print_single_meas is empty)
TREC_NOT_PER_QUERY = frozenset({"runid", "num_q", "gm_map", "gm_bpref"})
# trec_eval prints these as quoted text per query, and no `all` line
TREC_TEXTS = frozenset({"relstring"})
TREC_COUNTS = frozenset({"num_q", "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"})
_OFFICIAL = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
             "bpref", "recip_rank", "iprec_at_recall", "P")  # fmt: skip
TREC_GROUPS: dict[str, tuple[str, ...]] = {
    "official": _OFFICIAL,
    "all_trec": (*_OFFICIAL, "relstring", "recall", "unj", "rbp", "rbp_resid", "infAP",
                 "gm_bpref", "utility", "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success",
                 "map_cut", "ndcg_cut", "ndcg_rel", "Rndcg", "binG", "G", "set_P", "set_recall",
                 "set_relative_P", "set_map", "set_F", "num_nonrel_judged_ret"),  # fmt: skip
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P",
            "set_recall", "set_relative_P", "set_map", "set_F"),  # fmt: skip
}
# measures with one float parameter that sqlmetrics takes: set_F.0.5 (its beta, default 1),
# relstring.20 (its length), rbp.p=0.8 and rbp_resid.p=0.8 (the persistence, "name=value")
_TREC_FLOAT_PARAMETER = frozenset({"set_F", "relstring", "rbp", "rbp_resid"})
_TREC_NAMED_PARAMETER = {"rbp": "p", "rbp_resid": "p"}
_TREC_CUT = re.compile(r"^([A-Za-z_]+?)_([0-9]+|[0-9]\.[0-9]{2})$")
_ATOL = re.compile(r"^\s*([+-]?[0-9]+)")


def _float_parameter(name: str, text: str) -> float:
    """The one parameter of `name` (set_F's beta): a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise UnknownMetricError(f"{name}: the parameter is one number >= 0 (beta), got {text!r}")
    return value


def _level(value: float) -> str:
    return f"{value:3.2f}"  # trec_eval's "%3.2f"


def _trec_member(name: str, value: float | int) -> PeerName:
    template, _ = _TREC[name]
    if name in _FRACTIONS:
        label = f"{name}_{_level(value)}"
    else:
        label = f"{name}_{value}"
    canonical = None if template is None else template.format(k=value, r=_level(value))
    # Rprec_mult_x: one metric whose parameter is x
    return PeerName(label, canonical, param=float(value) if name == "Rprec_mult" else None)


def _trec_cutoffs(name: str, params: str | None) -> list:
    """A measure's cutoffs: its defaults, or "-m name.5,10" as trec_eval reads them (atol or
    atof each, sorted, distinct)."""
    _, defaults = _TREC[name]
    if params is None:
        return list(defaults)
    values = []
    for part in params.split(","):
        if name in _FRACTIONS:
            try:
                values.append(float(part))
            except ValueError:
                raise UnknownMetricError(f"trec_eval's {name}.{params}: {part!r} is not a number") from None
        else:
            match = _ATOL.match(part)
            if not match or int(match.group(1)) <= 0:
                raise UnknownMetricError(
                    f"trec_eval's {name}.{params}: cutoffs are positive integers, got {part!r}"
                )
            values.append(int(match.group(1)))
    if len(set(values)) != len(values):
        raise UnknownMetricError(f"trec_eval's {name}.{params}: a cutoff is given twice")
    return sorted(values)


def _trec(name: str, in_group: bool = False) -> Resolved | None:
    base, dot, params = name.partition(".")
    if base in TREC_GROUPS and not dot:
        members = [m for group in TREC_GROUPS[base] for m in _trec(group, True).names]  # type: ignore[union-attr]
        return Resolved(tuple(members), group=True)
    if base in _TREC:
        template, cuts = _TREC[base]
        # a bare `recall` is sqlmetrics' own (the whole list), but all_trec's recall_5, ...
        if cuts is not None and (base != "recall" or dot or in_group):
            members = [_trec_member(base, v) for v in _trec_cutoffs(base, params if dot else None)]
            return Resolved(tuple(members), group=True)
        if dot and base in _TREC_FLOAT_PARAMETER:
            # trec_eval prints the measure as name_params, the parameters as typed
            value = params
            if base in _TREC_NAMED_PARAMETER:
                key, equals, value = params.partition("=")
                if not equals:
                    return None  # rbp.95: ranx's name
                if key != _TREC_NAMED_PARAMETER[base]:
                    raise UnknownMetricError(
                        f"trec_eval's {name}: write {base}.{_TREC_NAMED_PARAMETER[base]}=VALUE"
                    )
            return Resolved((PeerName(f"{base}_{params}", template, param=_float_parameter(name, value)),))
        if dot:
            raise UnknownMetricError(f"trec_eval's {base} takes no parameters here: write {base!r}")
        if cuts is not None:  # `recall`: sqlmetrics' recall of the whole list
            template = base
        return Resolved((PeerName(base, template),))
    match = _TREC_CUT.match(name)
    if match and match.group(1) in _TREC and _TREC[match.group(1)][1] is not None:
        base, value = match.group(1), match.group(2)
        if base == "iprec_at_recall":
            if "." not in value:
                return None
            return Resolved((PeerName(name, f"iprec_at_recall_{value}"),))
        if base == "Rprec_mult":
            if "." not in value:
                return None
            return Resolved((PeerName(name, "Rprec_mult", param=float(value)),))
        if "." in value:
            return None
        template = _TREC[base][0]
        return Resolved((PeerName(name, None if template is None else template.format(k=int(value))),))
    if match and match.group(1) == "relstring" and "." not in match.group(2):
        return Resolved((PeerName(name, "relstring", param=float(match.group(2))),))  # relstring_20
    return None


# --- ir_measures -------------------------------------------------------------------------------
# name -> (sqlmetrics name without a cutoff, with one ("{k}"), whether it takes rel=)
_IR: dict[str, tuple[str | None, str | None, bool]] = {
    "nDCG": ("ndcg", "ndcg@{k}", False),
    "P": ("precision", "precision@{k}", True),
    "R": ("recall", "recall@{k}", True),
    "AP": ("map", "map@{k}", True),
    "RR": ("mrr", "mrr@{k}", True),
    "Success": (None, "hit_rate@{k}", True),
    "Judged": (None, "judged@{k}", False),
    "Rprec": ("r_precision", None, True),
    "Bpref": ("bpref", None, True),
    "NumQ": ("num_q", None, False),
    "NumRet": ("num_ret", None, True),  # NumRet(rel=N): the retrieved with rel >= N
    "NumRel": ("num_rel", None, True),
    "NumRelRet": ("num_rel_ret", None, True),
    "SetP": ("set_P", None, True),
    "SetR": ("set_recall", None, True),
    "SetF": ("set_F", None, True),
    "IPrec": (None, "iprec_at_recall_{r}", True),
    "ERR": ("err", "err@{k}", False),  # gdeval's; ERR(max_grade=3)@10: sqlmetrics' parameter
    "nERR": ("nerr", "nerr@{k}", False),  # (sqlmetrics' name in ir_measures' form)
    "RBP": ("rbp_gain", "rbp_gain@{k}", True),  # graded; RBP(rel=2): binary at grade 2
    # the intent-aware measures of ndeval (subtopics=); rel=: the grade from which a subtopic
    # judgement is relevant
    "alpha_nDCG": (None, "alpha_ndcg@{k}", True),
    "P_IA": (None, "p_ia@{k}", True),
    "AP_IA": ("ap_ia", None, True),
    "ERR_IA": (None, "err_ia@{k}", True),
    "NRBP": ("nrbp", None, True),  # NRBP(beta=0.8); alpha= only 0.5
}
# the one number each measure takes, by its parameter's name (registry.py's `parameter`)
_IR_PARAMETER = {
    "SetF": "beta", "RBP": "p", "ERR": "max_grade", "nERR": "max_grade", "alpha_nDCG": "alpha", "NRBP": "beta"
}
_IR_NAME = re.compile(r"^([A-Za-z]+(?:_[A-Za-z]+)?)(?:\((.*)\))?(?:@([0-9.]+))?$")
_IR_PARAM = re.compile(r"""^\s*([a-z_]+)\s*=\s*(?:'([^']*)'|"([^"]*)"|([^'",\s]+))\s*$""")


def _ir_params(name: str, text: str) -> dict[str, str]:
    params: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        match = _IR_PARAM.match(part)
        if not match:
            raise UnknownMetricError(f"ir_measures' {name}: cannot read the parameter {part!r}")
        value = next(v for v in match.group(2, 3, 4) if v is not None)
        params[match.group(1)] = value
    return params


def _ir(name: str) -> Resolved | None:
    match = _IR_NAME.match(name)
    if not match or match.group(1) not in _IR:
        return None
    measure, params_text, cutoff = match.groups()
    bare, cut, takes_rel = _IR[measure]
    params = _ir_params(name, params_text or "")
    overrides: list[tuple[str, object]] = []
    if "rel" in params and takes_rel:
        rel = params.pop("rel")
        if not re.fullmatch(r"[0-9]+", rel) or int(rel) < 1:
            raise UnknownMetricError(f"{name}: rel= is a positive integer grade, got {rel!r}")
        overrides.append(("threshold", int(rel)))
        if measure == "NumRet":
            bare = "num_rel_ret"
        if measure == "RBP":
            overrides.append(("gain", "binary"))
    if measure == "nDCG" and "dcg" in params:
        dcg = params.pop("dcg")
        if dcg not in ("log2", "exp-log2"):
            raise UnknownMetricError(f"{name}: dcg= is 'log2' or 'exp-log2' here, got {dcg!r}")
        if dcg == "exp-log2":
            overrides.append(("gain", "exponential"))
    if measure == "NRBP" and "alpha" in params and _float_parameter(name, params["alpha"]) == 0.5:
        del params["alpha"]  # sqlmetrics' nrbp takes alpha = 0.5 only
    number = _IR_PARAMETER.get(measure)
    beta = _float_parameter(name, params.pop(number)) if number in params else None
    if params:
        raise UnknownMetricError(
            f"{name}: sqlmetrics has no equivalent of ir_measures' {measure} with "
            f"{', '.join(sorted(params))}="
        )
    if cutoff is None:
        canonical = bare
    elif measure == "IPrec":
        try:
            canonical = cut.format(r=_level(float(cutoff)))  # type: ignore[union-attr]
        except ValueError:
            return None
    elif cut is None or not re.fullmatch(r"[0-9]+", cutoff):
        raise UnknownMetricError(f"{name}: ir_measures' {measure} takes no cutoff like @{cutoff}")
    else:
        canonical = cut.format(k=int(cutoff))
    if canonical is None:
        raise UnknownMetricError(f"{name}: ir_measures' {measure} needs a cutoff, e.g. {measure}@10")
    return Resolved((PeerName(name, canonical, tuple(overrides), "ir_measures", beta),))


# --- ranx --------------------------------------------------------------------------------------
# name -> (sqlmetrics name, the gain it implies or None, whether -lN also cuts its gains)
_RANX: dict[str, tuple[str, str | None, bool]] = {
    "ndcg": ("ndcg", None, True),
    "ndcg_burges": ("ndcg", "exponential", True),
    "dcg": ("dcg", None, True),
    "dcg_burges": ("dcg", "exponential", True),
    "map": ("map", None, False),
    "mrr": ("mrr", None, False),
    "precision": ("precision", None, False),
    "recall": ("recall", None, False),
    "f1": ("f1", None, False),
    "hit_rate": ("hit_rate", None, False),
    "r_precision": ("r_precision", None, False),
    "r-precision": ("r_precision", None, False),  # ranx 0.3's spelling
    "bpref": ("bpref", None, False),
}
_RANX_RBP = re.compile(r"^rbp\.([0-9]+)(?:-l([0-9]+))?$")
_RANX_NAME = re.compile(r"^([a-z_0-9-]+?)(?:@([0-9]+))?(?:-l([0-9]+))?$")


def _ranx(name: str) -> Resolved | None:
    rbp = _RANX_RBP.match(name)
    if rbp:
        # rbp.95: p = 0.95, the grades of the judgments at or above rel_lvl as gains
        overrides: list[tuple[str, object]] = [("gain_from_threshold", True)]
        if rbp.group(2) is not None:
            overrides.insert(0, ("threshold", int(rbp.group(2))))
        return Resolved((PeerName(name, "rbp_gain", tuple(overrides), "ranx", float(f"0.{rbp.group(1)}")),))
    match = _RANX_NAME.match(name)
    if not match or match.group(1) not in _RANX:
        return None
    measure, cutoff, level = match.groups()
    canonical, gain, cuts_gains = _RANX[measure]
    if measure == "f1" and cutoff is None:
        canonical = "set_F"  # ranx's f1 without k: over the whole list
    elif cutoff is not None:
        canonical = f"{canonical}@{cutoff}"
    overrides: list[tuple[str, object]] = []
    if level is not None:
        overrides.append(("threshold", int(level)))
    if gain is not None:
        overrides.append(("gain", gain))
    if level is not None and cuts_gains:
        # ranx drops the judgments below rel_lvl before it computes dcg: grades under the
        # threshold gain nothing
        overrides.append(("gain_from_threshold", True))
    return Resolved((PeerName(name, canonical, tuple(overrides), "ranx"),))


# --- sqlmetrics' own parameters, in ir_measures' form (issue 37, item 4) -------------------------
# the measures over item groups: name -> (its parameter, the range it takes, said in words)
_OWN_PARAMETER: dict[str, tuple[str, object, str]] = {
    "calibration": ("alpha", lambda x: 0 < x <= 1, "0 < alpha <= 1"),
    "rbo": ("p", lambda x: 0 < x < 1, "0 < p < 1"),
    "rbo_sum": ("p", lambda x: 0 < x < 1, "0 < p < 1"),
    **dict.fromkeys(
        ("ee_l", "ee_d", "ee_r", "group_ee_l", "group_ee_d", "group_ee_r"),
        ("gamma", lambda x: 0 < x < 1, "0 < gamma < 1"),
    ),
}
_OWN_NAME = re.compile(r"^([A-Za-z_]+)\((.*)\)(?:@([0-9]+))?$")


def _own(name: str) -> Resolved | None:
    """calibration(alpha=0.05)@10: sqlmetrics' metric with its parameter, the label as typed."""
    match = _OWN_NAME.match(name)
    if not match or match.group(1).lower() not in _OWN_PARAMETER:
        return None
    base, text, cutoff = match.group(1).lower(), match.group(2), match.group(3)
    key, allowed, words = _OWN_PARAMETER[base]
    params = _ir_params(name, text)
    if set(params) - {key}:
        raise UnknownMetricError(f"{name}: {base} takes one parameter, {key}=")
    value = None
    if key in params:
        try:
            value = float(params[key])
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or not allowed(value):  # type: ignore[operator]
            raise UnknownMetricError(f"{name}: {key} must be a number with {words}, got {params[key]!r}")
    canonical = base if cutoff is None else f"{base}@{cutoff}"
    return Resolved((PeerName(name, canonical, (), "sqlmetrics", value),))


def resolve(name: str) -> Resolved | None:
    """What a peer's metric name means here, or None if no peer has it. trec_eval's names come
    first (case-sensitive), then ir_measures' (case-sensitive), then ranx's.

    >>> name = resolve("P(rel=2)@5").names[0]
    >>> name.label, name.canonical, name.overrides, name.peer
    ('P(rel=2)@5', 'precision@5', (('threshold', 2),), 'ir_measures')
    >>> resolve("set_F.0.5").names[0].param, resolve("SetF(beta=0.5)").names[0].param
    (0.5, 0.5)
    >>> resolve("no_such_name") is None
    True
    """
    for reader in (_trec, _ir, _ranx, _own):
        found = reader(name.strip())
        if found is not None:
            return found
    return None


def suggestions() -> list[str]:
    """Names for "did you mean": every peer's bare names and trec_eval's default ones."""
    names = [*TREC_GROUPS]
    for name, template, cuts in TREC_MEASURES:
        if template is None:
            continue
        if cuts is None:
            names.append(name)
        else:
            names.append(name)
            names.extend(_trec_member(name, v).label for v in cuts)
    names += [*_IR, *_RANX]
    return names


def trec_name(name: str, k: int | None) -> str | None:
    """trec_eval's name for sqlmetrics' metric `name` (the registry's) at cutoff k, or None
    where trec_eval has none (mrr@10: its recip_rank takes no cutoff).

    >>> trec_name("ndcg", 10), trec_name("precision", 5), trec_name("mrr", None), trec_name("mrr", 10)
    ('ndcg_cut_10', 'P_5', 'recip_rank', None)
    """
    for trec, template, cuts in TREC_MEASURES:
        if template is None:
            continue
        if "{k}" in template and k is not None and template == f"{name}@{{k}}":
            return f"{trec}_{k}"
        if "{" not in template and k is None and template == name:
            return trec
        if "{r}" in template and k is None and cuts is not None:  # iprec_at_recall_0.10
            levels = {template.format(r=_level(value)) for value in cuts}
            if name in levels:
                return name
    return None


def trec_position(label: str) -> tuple[int, float] | None:
    """Where trec_eval prints a measure it names (its measure table's order, then the cutoff),
    or None for a name that is not trec_eval's."""
    order = {name: i for i, (name, _, _) in enumerate(TREC_MEASURES)}
    if label in order:
        return order[label], 0.0
    match = _TREC_CUT.match(label)
    if match and match.group(1) in order and _TREC[match.group(1)][1] is not None:
        return order[match.group(1)], float(match.group(2))
    base, underscore, _ = label.rpartition("_")
    if underscore and base in _TREC_FLOAT_PARAMETER:  # set_F_0.5
        return order[base], 0.0
    return None
