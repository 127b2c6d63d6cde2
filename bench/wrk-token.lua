-- Token-mode load for wrk (Debian package `wrk`), the same requests as bench/ingress.ts sends: 1 KB JSON bodies,
-- each with a distinct id (its body hash is its identity). wrk's client is C: it takes a tenth of the CPU per
-- request that autocannon does, and every connection sends its next request as soon as its answer arrives.
--
--   TOKEN=<bearer token> WPATH=/webhooks/w/<uid> wrk -t1 -c50 -d8s -s bench/wrk-token.lua http://127.0.0.1:<port>
--
-- against `node bench/ingress-server.ts` (it prints the URL and token) or `node bench/ingress-bare.ts`
-- (any token, WPATH=/webhooks/w/bench). docs/decisions.md, "A group takes half the deliveries in progress".
local counter = 0
local pad = string.rep("x", 1024)
local token = os.getenv("TOKEN") or ""
local path = os.getenv("WPATH") or "/webhooks/w/bench"
-- distinct from every earlier run against the same server: the time, and a random number seeded per run
math.randomseed(os.time() * 1000 + math.floor(os.clock() * 1e6))
local prefix = tostring(os.time()) .. "-" .. tostring(math.random(1, 1e9))

function request()
  counter = counter + 1
  local head = '{"event":"order.created","id":"' .. prefix .. "-" .. counter .. '","data":{"pad":"'
  local body = head .. string.sub(pad, 1, 1024 - #head - 4) .. '"}}'
  return wrk.format("POST", path, { ["content-type"] = "application/json", ["authorization"] = "Bearer " .. token }, body)
end
