"""The demo's three small FastAPI services (edge, orders, billing), built on the SDK only.

They import ``tenantguard`` SDK modules, FastAPI, httpx and uvicorn, never a tenantguard
service, and each talks to its own sidecar over HTTP like any service would. Each answer
carries a short trace of what that hop saw (token issuer, audience, actor chain, scope,
decision), so the demo can narrate the flow from the responses alone.
"""
