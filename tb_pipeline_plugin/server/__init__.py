"""The TensorBoard plugin: routes, parameter parsing, the HTTP contract and the store.

The only package that knows about HTTP (werkzeug) and TensorBoard's plugin API.
"""
