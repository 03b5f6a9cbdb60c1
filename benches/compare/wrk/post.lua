-- wrk script of the http_echo benchmark's POST variant (scripts/compare_http.sh):
-- every request is `POST /` with a body of HTTP_POST_SIZE bytes (default 64),
-- framed by Content-Length, which every server must echo back.
local size = tonumber(os.getenv("HTTP_POST_SIZE") or "64")
wrk.method = "POST"
wrk.body = string.rep("x", size)
wrk.headers["Content-Type"] = "application/octet-stream"
