# The walking skeleton (config/papers/demo.yaml): only the generic outputs its config declares.


rule demo:
    """Every output of the demo paper: DP-SGD, NonPrivate and Majority on one small dataset."""
    input:
        paper_outputs("demo"),
