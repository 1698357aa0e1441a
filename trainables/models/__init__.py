"""Models for numsweep: the digit tokenizer, from-scratch LLaMA presets and pretrained loading."""
