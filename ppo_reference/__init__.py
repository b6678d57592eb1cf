"""Trusted reference implementation of the PPO chapter (Book ch. 5). Instructor side only."""
