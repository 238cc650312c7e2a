"""DP-GD and DP-SGD as Wang's lecture notes (Lecture 15) teach them: projected noisy full-batch
gradient descent (``dp-gd-lecture``, :mod:`.dp_gd`, Lemma 15.1) and one-example noisy SGD
(``dp-sgd-lecture``, :mod:`.dp_sgd`, Lemma 15.5).

Privacy argument, for both: adjacency replace-one (the notes'); each step's per-example
gradients are clipped to L, so the mean gradient (DP-GD) moves by at most 2L/n and one sampled
row's gradient (DP-SGD) by at most 2L; Gaussian noise per step, composed over T steps by the
notes' bounds (advanced composition with the classical Gaussian; amplification by sampling for
DP-SGD) or by the tighter accountants the notes motivate (RDP, PLD). The calibrations and the
shared projected loop are in :mod:`.theory`.
"""
