"""The further aliases against Optax 0.2.8: parameters after four (RAdam: eight) jitted
steps, computed with the installed optax and written here literally."""

import numpy as np
import pytest

import mytorch.numpy as mnp
from mytorch import optim

from ._data import GRADS, run

OPTAX = {
    "adamax": {"b": [0.4733410179615021, -0.9635578989982605],
               "w": [[0.9032782316207886, -1.976990818977356],
                     [0.1784282922744751, 2.912846803665161]]},
    "adamaxw": {"b": [0.4639354944229126, -0.9444798231124878],
                "w": [[0.8845909237861633, -1.9377998113632202],
                      [0.17414456605911255, 2.85430645942688]]},
    "adabelief": {"b": [0.47979414463043213, -0.9734066128730774],
                  "w": [[0.8798217177391052, -1.9827393293380737],
                        [0.14973591268062592, 2.8835370540618896]]},
    "amsgrad": {"b": [0.4813072681427002, -0.9775446653366089],
                "w": [[0.9017642736434937, -1.9824488162994385],
                      [0.16055117547512054, 2.912905693054199]]},
    "lars": {"b": [0.499960720539093, -0.9989615082740784],
             "w": [[0.9952483773231506, -1.995672345161438],
                   [0.24723950028419495, 2.989417314529419]]},
    "novograd": {"b": [0.5146602988243103, -0.974341094493866],
                 "w": [[0.8835752010345459, -2.014704465866089],
                       [0.1893940269947052, 2.8778622150421143]]},
    "signum": {"b": [0.5, -1.0],
               "w": [[0.9600000381469727, -2.0], [0.22999998927116394, 2.9600000381469727]]},
    "sign_sgd": {"b": [0.48000001907348633, -1.0],
                 "w": [[0.9800000190734863, -2.0], [0.22999998927116394, 2.990000009536743]]},
    "noisy_sgd": {"b": [0.5149061679840088, -1.025215744972229],
                  "w": [[1.0054917335510254, -1.9800552129745483],
                        [0.22205254435539246, 2.96435284614563]]},
    "rmsprop_bias_correction": {"b": [0.48982349038124084, -1.0081206560134888],
                                "w": [[0.9910790324211121, -1.9945930242538452],
                                      [0.22666575014591217, 2.993396282196045]]},
    "sgd_sched_momentum": {"b": [0.5091511607170105, -1.005826473236084],
                           "w": [[0.9313486218452454, -2.0034537315368652],
                                 [0.22132214903831482, 2.920862913131714]]},
    "radam8": {"b": [0.5008037686347961, -1.0106632709503174],
               "w": [[0.95867520570755, -1.9963544607162476],
                     [0.2138526290655136, 2.9473276138305664]]},
    "radam8_nesterov": {"b": [0.49870944023132324, -1.0131314992904663],
                        "w": [[0.9566899538040161, -1.9941891431808472],
                              [0.20814816653728485, 2.944331645965576]]},
    "adafactor_factored": {"b": [0.47666072845458984, -1.018659234046936],
                           "w": [[0.8505710959434509, -2.005054235458374],
                                 [0.16103892028331757, 2.938087224960327]]},
    "adafactor_default": {"b": [-0.599784791469574, -0.560658872127533],
                          "w": [[-1.0029869079589844, 0.409773588180542],
                                [-3.820342540740967, 1.1826295852661133]]},
    "sm3": {"b": [0.48305392265319824, -0.9932780265808105],
            "w": [[0.9628647565841675, -1.9801493883132935],
                  [0.20810508728027344, 2.9719250202178955]]},
    "yogi": {"b": [0.4852589964866638, -0.9774081707000732],
             "w": [[0.894583523273468, -1.9873569011688232],
                   [0.1686350703239441, 2.894885540008545]]},
    "adadelta": {"b": [0.4973515272140503, -0.9991097450256348],
                 "w": [[0.9974168539047241, -1.9956834316253662],
                       [0.2453283816576004, 2.9959604740142822]]},
    "adan": {"b": [0.47291094064712524, -0.9562845230102539],
             "w": [[0.873878538608551, -1.9457465410232544],
                   [0.1623990684747696, 2.836425304412842]]},
    "rprop": {"b": [0.4749999940395355, -1.0],
              "w": [[0.949999988079071, -2.0], [0.22499999403953552, 2.950000047683716]]},
    "fromage": {"b": [0.4217033386230469, -0.9675411581993103],
                "w": [[0.7000032663345337, -1.894904613494873],
                      [-0.05495604872703552, 2.6863808631896973]]},
    "fromage_sched": {"b": [0.498704731464386, -0.951567530632019],
                      "w": [[0.7076079845428467, -2.0671675205230713],
                            [0.19683338701725006, 2.7263343334198]]},
    "cond_transform": {"b": [0.20678365230560303, -0.9442217946052551],
                       "w": [[1.2193516492843628, -2.0052638053894043],
                             [0.16558901965618134, 2.9733669757843018]]},
    "cond_mask": {"b": [0.3115639388561249, -1.1511013507843018],
                  "w": [[1.146945595741272, -2.0505809783935547],
                        [0.05296642333269119, 3.1266329288482666]]},
    "flatten_adam": {"b": [0.465629905462265, -0.9530783891677856],
                     "w": [[0.7874201536178589, -1.9703868627548218],
                           [0.0711023360490799, 2.7884023189544678]]},
    "normalize": {"b": [0.4997440576553345, -1.016035556793213],
                  "w": [[0.9659522175788879, -1.9871830940246582],
                        [0.21445783972740173, 2.966495990753174]]},
    "apply_every": {"b": [0.4949999749660492, -1.0299999713897705],
                    "w": [[0.9800000190734863, -1.9900000095367432],
                          [0.20499999821186066, 2.9700000286102295]]},
}


def _configs():
    return {
        "adamax": optim.adamax(0.05),
        "adamaxw": optim.adamaxw(0.05, weight_decay=0.1),
        "adabelief": optim.adabelief(0.05),
        "amsgrad": optim.amsgrad(0.05),
        "lars": optim.lars(0.5, weight_decay=0.1),
        "novograd": optim.novograd(0.05, weight_decay=0.01),
        "signum": optim.signum(0.01),
        "sign_sgd": optim.sign_sgd(0.01),
        "noisy_sgd": optim.noisy_sgd(0.1, key=3),
        "rmsprop_bias_correction": optim.rmsprop(0.01, bias_correction=True,
                                                 eps_in_sqrt=False),
        "sgd_sched_momentum": optim.sgd(optim.exponential_decay(0.1, 2, 0.5), momentum=0.9),
        "radam8": optim.radam(0.05, b2=0.95),
        "radam8_nesterov": optim.radam(0.05, b2=0.95, nesterov=True),
        "adafactor_factored": optim.adafactor(0.05, min_dim_size_to_factor=2, momentum=0.5),
        "adafactor_default": optim.adafactor(),
        "sm3": optim.sm3(0.1),
        "yogi": optim.yogi(0.05),
        "adadelta": optim.adadelta(0.5, weight_decay=0.1),
        "adan": optim.adan(0.05, weight_decay=0.1),
        "rprop": optim.rprop(0.05),
        "fromage": optim.fromage(0.1),
        "fromage_sched": optim.fromage(optim.linear_schedule(0.1, 0.01, 3)),
        "cond_transform": optim.conditionally_transform(optim.adam(0.1), lambda s: s % 2 == 0),
        "cond_mask": optim.conditionally_mask(optim.adam(0.1), lambda s: s >= 2),
        "flatten_adam": optim.flatten(optim.adam(0.1)),
        "normalize": optim.chain(optim.normalize_by_update_norm(0.5), optim.sgd(0.1)),
        "apply_every": optim.chain(optim.apply_every(2), optim.sgd(0.1)),
    }


@pytest.mark.parametrize("name", sorted(OPTAX))
def test_matches_optax(name):
    grads = GRADS + GRADS if name.startswith("radam8") else GRADS
    params, _ = run(_configs()[name], grads=grads)
    for leaf in ("b", "w"):
        np.testing.assert_allclose(np.asarray(params[leaf]), OPTAX[name][leaf],
                                   rtol=2e-6, atol=2e-7)


def test_adafactor_state_is_factored_for_large_matrices():
    params = {"big": mnp.zeros((128, 256)), "small": mnp.zeros((3, 4)), "vec": mnp.zeros(7)}
    state = optim.adafactor(0.01).init(params)[0]
    assert state.v_row["big"].shape == (128,) and state.v_col["big"].shape == (256,)
    assert state.v["big"].shape == (1,)
    assert state.v["small"].shape == (3, 4) and state.v_row["small"].shape == (1,)
    assert state.v["vec"].shape == (7,)


def test_sm3_keeps_one_accumulator_per_axis():
    opt = optim.sm3(0.1)
    state = opt.init({"m": mnp.ones((3, 5)), "s": mnp.ones(())})
    assert [a.shape for a in state[0].mu["m"]] == [(3,), (5,)]
    assert state[0].mu["s"] == []
    u, state = opt.update({"m": mnp.ones((3, 5)), "s": mnp.asarray(2.0)}, state)
    # first step: acc = g**2, update = -lr * (1 - b1) * g / |g|
    np.testing.assert_allclose(np.asarray(u["m"]), np.full((3, 5), -0.01), rtol=1e-6)
    np.testing.assert_allclose(float(u["s"]), -0.01, rtol=1e-6)


def test_scale_gradient_scales_only_the_backward_pass(x64):
    import mytorch as mt

    def f(x):
        y = optim.scale_gradient({"a": x, "b": 2 * x}, 0.25)
        return mnp.sum(y["b"] ** 2) + mnp.sum(y["a"])

    x = mnp.array([1.0, -2.0])
    np.testing.assert_array_equal(np.asarray(optim.scale_gradient(x, 0.25)), [1.0, -2.0])
    # d/dx [sum((2x)^2) + sum(x)] = 8x + 1, scaled by 0.25
    np.testing.assert_allclose(np.asarray(mt.grad(f)(x)), 0.25 * (8 * np.array([1.0, -2.0])
                                                                  + 1))
    np.testing.assert_allclose(np.asarray(mt.jit(mt.grad(f))(x)), [2.25, -3.75])
    assert float(mt.grad(lambda x: mnp.sum(optim.scale_gradient(x, 0.0) * x))(x)[0]) == 1.0
