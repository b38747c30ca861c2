// undici's Pool on its own. The package's index also builds fetch, WebSocket,
// the cache and the mock agent, about 400 KB of source and 2 MB of heap this
// server never uses. undici has no `exports` map, so the file is public to
// require; its types are the package's own.
declare module "undici/lib/dispatcher/pool.js" {
  import { Pool } from "undici";
  export default Pool;
}
