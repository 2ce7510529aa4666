"""The participant's model: edit ``MyModel.py`` and run ``python submission.py``."""
