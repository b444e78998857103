"""Built-in plugins: the LUMI site, PyTorch, JAX and the profilers.

They use the same hooks as third-party plugins, so the SDK is exercised by its own
main user.
"""
