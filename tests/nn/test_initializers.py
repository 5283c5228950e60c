"""mt.nn.initializers against jax.nn.initializers (JAX 0.10.2's numbers for the same key,
written literally), the fan computation, the variance formulas on large draws, and the
orthogonal initializers' orthogonality; jit equals eager, vmap over keys equals a loop.

Initializers built on uniform draws are bit-exact with JAX; those built on normal and
truncated-normal draws agree to float32 round-off (mt.random.normal's inverse error
function is not XLA's to the last bit), and orthogonal ones go through a QR that agrees
with XLA's to round-off.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
from mytorch.nn import initializers as I
from mytorch.nn.initializers import _compute_fans

# name: (builder, shape, JAX's init(jax.random.key(42), shape, jnp.float32).ravel())
JAX_VALUES = {
    "uniform": (
        lambda: I.uniform(10.0),
        (2, 3),
        [
            4.8870954513549805,
            6.797971725463867,
            6.162714958190918,
            5.610160827636719,
            4.50644588470459,
            5.858658790588379,
        ],
    ),
    "normal": (
        lambda: I.normal(5.0),
        (2, 3),
        [
            -0.141523078083992,
            2.3356592655181885,
            1.4785147905349731,
            0.7677295804023743,
            -0.6201640963554382,
            1.084615707397461,
        ],
    ),
    "truncated_normal": (
        lambda: I.truncated_normal(5.0),
        (2, 3),
        [
            -0.13508248329162598,
            2.2219040393829346,
            1.409385323524475,
            0.7325402498245239,
            -0.59181147813797,
            1.034537434577942,
        ],
    ),
    "truncated_normal_bounds": (
        lambda: I.truncated_normal(0.3, lower=-1.0, upper=3.0),
        (2, 3),
        [
            0.05227750167250633,
            0.18355490267276764,
            0.13722997903823853,
            0.09948123246431351,
            0.0280104111880064,
            0.11622781306505203,
        ],
    ),
    "glorot_uniform": (
        lambda: I.glorot_uniform(),
        (2, 3),
        [
            -0.02473609521985054,
            0.39391589164733887,
            0.25473809242248535,
            0.13367953896522522,
            -0.1081322431564331,
            0.1881226748228073,
        ],
    ),
    "glorot_normal": (
        lambda: I.glorot_normal(),
        (2, 3),
        [
            -0.019425004720687866,
            0.31951215863227844,
            0.2026711106300354,
            0.10534006357192993,
            -0.0851031169295311,
            0.14876757562160492,
        ],
    ),
    "he_uniform_conv": (
        lambda: I.he_uniform(),
        (3, 2, 2, 2),
        [
            -0.015967080369591713,
            0.25427159667015076,
            0.16443271934986115,
            0.08628977090120316,
            -0.06979905813932419,
            0.12143265455961227,
            -0.6013102531433105,
            0.38909733295440674,
            0.2813708484172821,
            0.4506160616874695,
            -0.2117004096508026,
            0.5272471308708191,
            0.602287232875824,
            0.5093016624450684,
            -0.03174332156777382,
            0.45040127635002136,
            0.29890039563179016,
            0.12260838598012924,
            -0.6028263568878174,
            0.3926171064376831,
            -0.13496465981006622,
            -0.538641095161438,
            -0.669975757598877,
            0.1968284696340561,
        ],
    ),
    "he_normal_conv": (
        lambda: I.he_normal(),
        (3, 2, 2, 2),
        [
            -0.0125387879088521,
            0.20624423027038574,
            0.13082364201545715,
            0.06799672544002533,
            -0.054933831095695496,
            0.09602905809879303,
            -0.6105867028236389,
            0.33172157406806946,
            0.23000912368297577,
            0.39750921726226807,
            -0.1699487715959549,
            0.4928387999534607,
            0.6124140620231628,
            0.46874210238456726,
            -0.024936670437455177,
            0.3972659111022949,
            0.24570541083812714,
            0.09697239845991135,
            -0.6134265661239624,
            0.33529943227767944,
            -0.1069115400314331,
            -0.5088539123535156,
            -0.7734295725822449,
            0.1575213372707367,
        ],
    ),
    "lecun_uniform": (
        lambda: I.lecun_uniform(),
        (4, 3),
        [
            -0.019555600360035896,
            0.311417818069458,
            0.2013881355524063,
            0.10568295419216156,
            -0.08548603951931,
            0.1487240195274353,
            -0.7364516258239746,
            0.47654497623443604,
            0.34460750222206116,
            0.5518897175788879,
            -0.2592789828777313,
            0.645743191242218,
        ],
    ),
    "lecun_normal": (
        lambda: I.lecun_normal(),
        (4, 3),
        [
            -0.015356816351413727,
            0.25259655714035034,
            0.16022558510303497,
            0.08327864110469818,
            -0.06727992743253708,
            0.1176111027598381,
            -0.7478129267692566,
            0.40627431869506836,
            0.2817024886608124,
            0.4868473708629608,
            -0.20814388990402222,
            0.6036018133163452,
        ],
    ),
    "vs_fan_out_normal": (
        lambda: I.variance_scaling(0.5, "fan_out", "normal"),
        (3, 4),
        [
            -0.010007192380726337,
            0.1651560515165329,
            0.10454678535461426,
            0.05428667739033699,
            -0.043852221220731735,
            0.07669391483068466,
            -0.5094276666641235,
            0.2672368288040161,
            0.18434613943099976,
            0.3217938244342804,
            -0.1359400749206543,
            0.40298840403556824,
        ],
    ),
    "vs_geo_axes": (
        lambda: I.variance_scaling(2.0, "fan_geo_avg", "uniform", in_axis=0, out_axis=(1, 2)),
        (3, 2, 2),
        [
            -0.02971808612346649,
            0.4732527732849121,
            0.3060437738895416,
            0.1606033593416214,
            -0.1299106925725937,
            0.22601164877414703,
            -1.1191644668579102,
            0.7241917848587036,
            0.5236901640892029,
            0.838690996170044,
            -0.39401885867118835,
            0.9813174605369568,
        ],
    ),
    "vs_batch_axis": (
        lambda: I.variance_scaling(1.0, "fan_in", "truncated_normal", batch_axis=0),
        (2, 3, 2),
        [
            -0.017732521519064903,
            0.29167336225509644,
            0.1850125640630722,
            0.09616187959909439,
            -0.07768816500902176,
            0.13580559194087982,
            -0.8634999394416809,
            0.4691251218318939,
            0.3252820074558258,
            0.5621628761291504,
            -0.24034383893013,
            0.696979284286499,
        ],
    ),
    "orthogonal": (
        lambda: I.orthogonal(),
        (3, 3),
        [
            -0.01952970027923584,
            0.9952677488327026,
            0.09518947452306747,
            0.10594390332698822,
            -0.09261152893304825,
            0.9900500178337097,
            -0.99418044090271,
            -0.02941983938217163,
            0.10363386571407318,
        ],
    ),
    "orthogonal_wide": (
        lambda: I.orthogonal(2.0),
        (2, 4),
        [
            -0.03834271430969238,
            0.40057292580604553,
            -0.1680206060409546,
            -1.9518814086914062,
            1.598646640777588,
            1.0606037378311157,
            0.547814130783081,
            0.13910126686096191,
        ],
    ),
    "orthogonal_column_axis": (
        lambda: I.orthogonal(column_axis=0),
        (3, 2, 2),
        [
            -0.01653873920440674,
            0.0897190272808075,
            -0.8419257998466492,
            0.5318253040313721,
            0.9798700213432312,
            -0.10146704316139221,
            0.06932306289672852,
            0.15733349323272705,
            -0.14570090174674988,
            0.20810870826244354,
            0.5343054533004761,
            0.8062130808830261,
        ],
    ),
    "delta_orthogonal": (
        lambda: I.delta_orthogonal(1.5),
        (3, 2, 2),
        [
            0.0,
            0.0,
            0.0,
            0.0,
            -0.14292633533477783,
            1.4931751489639282,
            1.4931751489639282,
            0.142926424741745,
            0.0,
            0.0,
            0.0,
            0.0,
        ],
    ),
}
BIT_EXACT = {"uniform", "glorot_uniform", "he_uniform_conv", "lecun_uniform", "vs_geo_axes"}


@pytest.mark.parametrize("name", sorted(JAX_VALUES))
def test_matches_jax(name):
    build, shape, want = JAX_VALUES[name]
    got = build()(mt.random.key(42), shape, np.float32)
    assert got.shape == shape and got.dtype == np.float32
    got = np.asarray(got).ravel()
    if name in BIT_EXACT:
        np.testing.assert_array_equal(got, np.asarray(want, np.float32))
    elif "orthogonal" in name:  # through a QR: XLA's and ours round differently
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)
    else:
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-7)


def test_constant_zeros_ones():
    k = mt.random.key(0)
    np.testing.assert_array_equal(np.asarray(I.zeros(k, (2, 3))), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(np.asarray(I.ones(k, (3,), np.float16)), np.ones(3, np.float16))
    c = I.constant(-7)(k, (2, 2))
    assert c.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(c), np.full((2, 2), -7.0, np.float32))
    assert I.constant(1.5, dtype=np.float16)(k, (1,)).dtype == np.float16


def test_default_dtype_follows_x64(x64):
    assert I.glorot_uniform()(mt.random.key(0), (2, 2)).dtype == np.float64
    assert I.zeros(mt.random.key(0), (2,)).dtype == np.float64
    assert I.normal(dtype=np.float32)(mt.random.key(0), (2,)).dtype == np.float32


@pytest.mark.parametrize(
    "shape,kw,fans",
    [
        ((3, 4), {}, (3, 4)),
        ((3, 3, 16, 32), {}, (9 * 16, 9 * 32)),  # HWIO conv kernel: receptive field 9
        ((5, 7, 2), {}, (35, 10)),  # 1-D conv (W, I, O)
        ((32, 16, 3, 3), {"in_axis": 1, "out_axis": 0}, (16 * 9, 32 * 9)),  # OIHW
        ((4, 3, 5), {"batch_axis": 0}, (3, 5)),  # a batch of 4 dense kernels
        ((2, 3, 4, 5), {"in_axis": (0, 1), "out_axis": -1}, (6 * 4, 5 * 4)),
        ((6,), {"in_axis": 0, "out_axis": 0}, (1.0, 1.0)),  # JAX's formula: 6 / 6 / 6 * 6
    ],
)
def test_compute_fans(shape, kw, fans):
    assert _compute_fans(shape, **kw) == fans


@settings(max_examples=20, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=2, max_size=5).map(tuple))
def test_compute_fans_default_axes(shape):
    fan_in, fan_out = _compute_fans(shape)
    field = math.prod(shape[:-2])
    assert (fan_in, fan_out) == (shape[-2] * field, shape[-1] * field)


@pytest.mark.parametrize(
    "distribution,check",
    [("uniform", "bound"), ("normal", "var"), ("truncated_normal", "var")],
)
@pytest.mark.parametrize("mode", ["fan_in", "fan_out", "fan_avg", "fan_geo_avg"])
def test_variance_of_large_draws(distribution, check, mode):
    shape = (3, 40, 100)  # receptive field 3, in 40, out 100
    fan_in, fan_out = 120, 300
    n = {
        "fan_in": fan_in,
        "fan_out": fan_out,
        "fan_avg": (fan_in + fan_out) / 2,
        "fan_geo_avg": math.sqrt(fan_in * fan_out),
    }[mode]
    w = np.asarray(I.variance_scaling(2.0, mode, distribution)(mt.random.key(1), shape), np.float64)
    var = 2.0 / n
    # sample variance of 12000 draws: relative sd about sqrt(2 / 12000) ~ 1.3%
    assert abs(w.var() / var - 1) < 0.06
    assert abs(w.mean()) < 4 * math.sqrt(var / w.size)
    if check == "bound":
        assert np.abs(w).max() <= math.sqrt(3 * var) * (1 + 1e-6)
        assert np.abs(w).max() > 0.99 * math.sqrt(3 * var)
    elif distribution == "truncated_normal":
        # truncated at 2 sd of the untruncated normal (sd = sqrt(var) / 0.8796...)
        assert np.abs(w).max() <= 2 * math.sqrt(var) / 0.87962566103423978 * (1 + 1e-6)


def test_presets_are_variance_scaling():
    k, shape = mt.random.key(3), (3, 3, 4, 6)
    pairs = [
        (I.glorot_uniform(), I.variance_scaling(1.0, "fan_avg", "uniform")),
        (I.glorot_normal(), I.variance_scaling(1.0, "fan_avg", "truncated_normal")),
        (I.he_uniform(), I.variance_scaling(2.0, "fan_in", "uniform")),
        (I.he_normal(), I.variance_scaling(2.0, "fan_in", "truncated_normal")),
        (I.lecun_uniform(), I.variance_scaling(1.0, "fan_in", "uniform")),
        (I.lecun_normal(), I.variance_scaling(1.0, "fan_in", "truncated_normal")),
    ]
    for preset, general in pairs:
        np.testing.assert_array_equal(np.asarray(preset(k, shape)), np.asarray(general(k, shape)))
    assert I.xavier_uniform is I.glorot_uniform and I.kaiming_normal is I.he_normal
    assert I.xavier_normal is I.glorot_normal and I.kaiming_uniform is I.he_uniform


@pytest.mark.parametrize(
    "shape,column_axis", [((4, 4), -1), ((3, 6), -1), ((6, 3), -1), ((2, 3, 5), -1), ((5, 2, 3), 0)]
)
def test_orthogonal_rows_or_columns(shape, column_axis):
    w = np.asarray(
        I.orthogonal(scale=2.0, column_axis=column_axis)(mt.random.key(5), shape), np.float64
    )
    assert w.shape == shape
    mat = np.moveaxis(w, column_axis, -1).reshape(-1, shape[column_axis]) / 2.0
    rows, cols = mat.shape
    gram = mat.T @ mat if rows >= cols else mat @ mat.T
    np.testing.assert_allclose(gram, np.eye(min(rows, cols)), atol=1e-5)


def test_orthogonal_empty_and_delta_orthogonal_structure():
    assert np.asarray(I.orthogonal()(mt.random.key(0), (0, 3))).shape == (0, 3)
    w = np.asarray(I.delta_orthogonal()(mt.random.key(5), (3, 3, 4, 6)), np.float64)
    centre = w[1, 1]
    np.testing.assert_allclose(centre @ centre.T, np.eye(4), atol=1e-5)
    w[1, 1] = 0
    assert not w.any()
    w5 = np.asarray(I.delta_orthogonal()(mt.random.key(5), (2, 3, 4, 2, 2)))
    assert np.abs(w5[0, 1, 1]).sum() > 0 and np.count_nonzero(w5) <= 4


def test_jit_and_vmap():
    init = I.he_normal()
    k = mt.random.key(9)
    eager = np.asarray(init(k, (4, 5)))
    jitted = mt.jit(init, static_argnums=1)(k, (4, 5))
    np.testing.assert_array_equal(np.asarray(jitted), eager)
    keys = mt.random.split(k, 3)
    for init in (I.he_normal(), I.glorot_uniform(), I.orthogonal()):
        batched = np.asarray(mt.vmap(lambda key, init=init: init(key, (3, 3)))(keys))
        looped = np.stack([np.asarray(init(keys[i], (3, 3))) for i in range(3)])
        np.testing.assert_allclose(batched, looped, rtol=1e-6, atol=1e-7)


def test_errors():
    k = mt.random.key(0)
    with pytest.raises(
        ValueError,
        match=r"can't compute input and output sizes of a "
        r"1-dimensional weight of shape \(5,\).*"
        r"test_initializers.py",
    ):
        I.glorot_uniform()(k, (5,))
    with pytest.raises(ValueError, match="invalid mode for variance scaling initializer: 'x'"):
        I.variance_scaling(1.0, "x", "normal")
    with pytest.raises(ValueError, match="invalid distribution for variance scaling"):
        I.variance_scaling(1.0, "fan_in", "cauchy")
    with pytest.raises(ValueError, match=r"in_axis 3 is out of range for a weight of shape"):
        I.variance_scaling(1.0, "fan_in", "normal", in_axis=3)(k, (2, 2))
    with pytest.raises(ValueError, match=r"orthogonal requires at least a 2D shape, got \(4,\)"):
        I.orthogonal()(k, (4,))
    with pytest.raises(ValueError, match="delta_orthogonal requires a 3D, 4D or 5D shape"):
        I.delta_orthogonal()(k, (3, 3))
    with pytest.raises(ValueError, match=r"`fan_in` must be less or equal than `fan_out`"):
        I.delta_orthogonal()(k, (3, 5, 4))
    with pytest.raises(ValueError, match="normal: dtype must be a float dtype, got int32"):
        I.normal()(k, (2,), np.int32)
    with pytest.raises(TypeError, match="shape must be a tuple of ints"):
        I.zeros(k, (2.5,))
