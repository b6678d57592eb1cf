"""ppo-course: the public, student-side package of the PPO chapter (Book ch. 5).

Holds what students need at run time: the small causal LM with a value head
(`ppo_course.model`), the book's config (`ppo_course.config`), the toy RLHF
task (`ppo_course.toy_task`) and the student commands. It never holds a
solution, a hidden test or an answer key.
"""

__version__ = "0.1.0"
