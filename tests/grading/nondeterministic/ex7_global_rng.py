"""Wrong on purpose: the PPO step samples with torch's global RNG (issue 16: its diagnosis alternated)."""

_solution_ppo_step = ppo_step  # noqa: F821 - the solution's step, defined above


def ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config, generator):
    real_generate = policy.generate

    def generate(queries, max_new_tokens, temperature=1.0, top_p=1.0, generator=None):
        return real_generate(queries, max_new_tokens, temperature, top_p)  # the generator dropped

    policy.generate = generate
    try:
        return _solution_ppo_step(policy, ref_policy, optimizer, queries, reward_fn, kl_ctl, config, generator)
    finally:
        del policy.generate
