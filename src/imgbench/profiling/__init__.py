"""``imgbench profile``: a user's own Dataset or DataLoader through the loader stage's machinery
(worker sweep, memory sampler, AU emulation), with py-spy stacks attributed to pipeline stages."""
