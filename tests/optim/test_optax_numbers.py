"""mt.optim against Optax 0.2.8: parameters after four jitted steps of each configuration,
computed with the installed optax and written here literally."""

import numpy as np
import pytest

import mytorch.numpy as mnp
from mytorch import optim

from ._data import run

OPTAX = {
    "adam": {"b": [0.4828149974346161, -0.9765392541885376],
             "w": [[0.8937100768089294, -1.9851933717727661],
                   [0.16055117547512054, 2.8942012786865234]]},
    "adamw": {"b": [0.4733201265335083, -0.9574429988861084],
              "w": [[0.8750965595245361, -1.9459261894226074],
                    [0.15627716481685638, 2.8357744216918945]]},
    "sgd_nesterov": {"b": [0.5106689929962158, -1.0689880847930908],
                     "w": [[0.8977670073509216, -1.9979289770126343],
                           [0.14461450278759003, 2.87139630317688]]},
    "lion": {"b": [0.478022962808609, -0.9960059523582458],
             "w": [[0.9760459661483765, -1.9920121431350708],
                   [0.22902147471904755, 2.9680581092834473]]},
    "rmsprop_centered": {"b": [0.4654443562030792, -1.0027159452438354],
                         "w": [[0.932583212852478, -1.983703374862671],
                               [0.17307105660438538, 2.9526898860931396]]},
    "adagrad": {"b": [0.4852060079574585, -1.0358072519302368],
                "w": [[0.9377123117446899, -1.9864888191223145],
                      [0.15691637992858887, 2.940107822418213]]},
    "lamb": {"b": [0.5112230777740479, -1.032138705253601],
             "w": [[0.7319105267524719, -2.0255300998687744],
                   [-0.06437447667121887, 2.6908247470855713]]},
    "chain_clip_adamw_warmup_cosine": {
        "b": [0.5494633316993713, -1.036389708518982],
        "w": [[0.906390905380249, -2.0362422466278076],
              [0.19152189791202545, 2.8907878398895264]]},
    "nadam": {"b": [0.46228960156440735, -0.9874595403671265],
              "w": [[0.8876696228981018, -1.9732334613800049],
                    [0.1333293914794922, 2.896684408187866]]},
    "multisteps_adam_k2": {"b": [0.5418631434440613, -0.9779752492904663],
                           "w": [[0.9404255151748657, -2.0316946506500244],
                                 [0.2663096487522125, 2.9265270233154297]]},
    "masked_adamw": {"b": [0.4828149974346161, -0.9765392541885376],
                     "w": [[0.8034846186637878, -1.794673204421997],
                           [0.1398511677980423, 2.610797643661499]]},
    "inject_adam_sched": {"b": [0.44764867424964905, -0.9118472337722778],
                          "w": [[0.8346469402313232, -1.9497261047363281],
                                [0.14996467530727386, 2.8502931594848633]]},
    # op by op (jax.disable_jit): XLA's fusion keeps bf16 intermediates in f32 under jit
    "adam_mu_bf16": {"b": [0.4828701317310333, -0.9766942858695984],
                     "w": [[0.8940630555152893, -1.9852372407913208],
                           [0.16068677604198456, 2.8945391178131104]]},
}


def _configs():
    return {
        "adam": optim.adam(0.05),
        "adamw": optim.adamw(0.05, weight_decay=0.1),
        "sgd_nesterov": optim.sgd(0.1, momentum=0.9, nesterov=True),
        "lion": optim.lion(0.01, weight_decay=0.1),
        "rmsprop_centered": optim.rmsprop(0.01, centered=True, momentum=0.5),
        "adagrad": optim.adagrad(0.1),
        "lamb": optim.lamb(0.05, weight_decay=0.01),
        "chain_clip_adamw_warmup_cosine": optim.chain(
            optim.clip_by_global_norm(0.5),
            optim.adamw(optim.warmup_cosine_decay_schedule(0.0, 0.1, 2, 4, 0.01),
                        weight_decay=0.05)),
        "nadam": optim.nadam(0.05),
        "multisteps_adam_k2": optim.MultiSteps(optim.adam(0.05), every_k_schedule=2)
        .gradient_transformation(),
        "masked_adamw": optim.adamw(0.05, weight_decay=0.5, mask={"b": False, "w": True}),
        "inject_adam_sched": optim.inject_hyperparams(optim.adam)(
            learning_rate=optim.linear_schedule(0.1, 0.01, 3), b1=0.8),
        "adam_mu_bf16": optim.adam(0.05, mu_dtype=mnp.bfloat16),
    }


@pytest.mark.parametrize("name", sorted(OPTAX))
def test_matches_optax_after_four_jitted_steps(name):
    params, _ = run(_configs()[name])
    for leaf in ("b", "w"):
        np.testing.assert_allclose(np.asarray(params[leaf]), OPTAX[name][leaf],
                                   rtol=2e-6, atol=2e-7)


def test_bfloat16_params_adam_matches_optax():
    # Optax: bf16 params and gradients keep bf16 moments and bf16 params
    params, state = run(optim.adam(0.05), dtype=mnp.bfloat16)
    expected = {"b": [0.482421875, -0.9765625],
                "w": [[0.89453125, -1.984375], [0.16015625, 2.890625]]}
    for leaf in ("b", "w"):
        assert params[leaf].dtype == mnp.bfloat16
        assert state[0].mu[leaf].dtype == mnp.bfloat16
        assert state[0].nu[leaf].dtype == mnp.bfloat16
        np.testing.assert_array_equal(np.asarray(params[leaf].astype(mnp.float32)),
                                      expected[leaf])
    assert state[0].count.dtype == mnp.int32


def test_apply_if_finite_matches_optax():
    from ._data import GRADS
    grads = [GRADS[0], {"b": np.array([np.nan, 0.0], np.float32), "w": GRADS[1]["w"]},
             GRADS[2], GRADS[3]]
    params, state = run(optim.apply_if_finite(optim.sgd(0.1, momentum=0.9), 2), grads)
    expected = {"b": [0.4434000253677368, -1.0307999849319458],
                "w": [[0.9847000241279602, -1.961899995803833],
                      [0.1594499945640564, 2.919600009918213]]}
    for leaf in ("b", "w"):
        np.testing.assert_allclose(np.asarray(params[leaf]), expected[leaf], rtol=2e-6)
    assert int(state.notfinite_count) == 0 and int(state.total_notfinite) == 1
    assert bool(state.last_finite)
