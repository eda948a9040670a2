"""The other side of the search-overhead benchmark: mctx's PUCT (muzero_policy) on JAX, over
pgx's environments, with the same trivial evaluator (uniform priors over the legal moves, zero
values). An optional install: `pip install -e '.[compare]'` (jax, mctx, pgx).

    search = mctx_search("tictactoe", batch=256, simulations=64)
    search()   # one jitted search of every root; returns the simulations done (batch * simulations)
"""

from __future__ import annotations

from typing import Callable

PGX_NAMES = {"tictactoe": "tic_tac_toe", "connect4": "connect_four"}  # our game -> pgx's environment
INSTALL = "pip install -e '.[compare]'"


def available() -> str | None:
    """None if jax, mctx and pgx import; else why not (with the command that installs them)."""
    try:
        import jax  # noqa: F401
        import mctx  # noqa: F401
        import pgx  # noqa: F401
    except ImportError as error:
        return f"{error.name} is not installed: {INSTALL}"
    return None


def mctx_search(game: str, batch: int, simulations: int, seed: int = 0) -> Callable[[], float]:
    """A closure running mctx.muzero_policy (PUCT, c_init 1.25, c_base 19652, no root noise) on
    `batch` initial positions of pgx's version of `game`; each call is one jitted search and
    returns batch * simulations. The first call compiles."""
    import jax
    import jax.numpy as jnp
    import mctx
    import pgx

    env = pgx.make(PGX_NAMES[game])
    init = jax.jit(jax.vmap(env.init))
    step = jax.vmap(env.step)
    roots = init(jax.random.split(jax.random.PRNGKey(seed), batch))

    def uniform_logits(legal):
        return jnp.where(legal, 0.0, jnp.finfo(jnp.float32).min)

    def recurrent_fn(params, rng_key, action, state):
        del params, rng_key
        mover = state.current_player
        state = step(state, action)
        reward = state.rewards[jnp.arange(batch), mover]
        zeros = jnp.zeros(batch, dtype=jnp.float32)
        discount = jnp.where(state.terminated, 0.0, -1.0)  # two-player: the next value is the opponent's
        output = mctx.RecurrentFnOutput(reward=reward, discount=discount,
                                        prior_logits=uniform_logits(state.legal_action_mask), value=zeros)
        return output, state

    @jax.jit
    def search(rng_key):
        root = mctx.RootFnOutput(prior_logits=uniform_logits(roots.legal_action_mask),
                                 value=jnp.zeros(batch, dtype=jnp.float32), embedding=roots)
        out = mctx.muzero_policy(None, rng_key, root, recurrent_fn, simulations,
                                 invalid_actions=~roots.legal_action_mask, dirichlet_fraction=0.0)
        return out.action_weights

    keys = [jax.random.PRNGKey(seed)]

    def work() -> float:
        keys[0], key = jax.random.split(keys[0])
        search(key).block_until_ready()
        return float(batch * simulations)

    return work
