// Preloaded into the bundle's Node (NODE_OPTIONS=--require, set by forge-step): the pod runs as
// uid 1000, which a task's image usually has no /etc/passwd entry for, and os.userInfo() then
// throws (uv_os_get_passwd ENOENT) — Qwen Code calls it at start. This answers from the
// environment instead, only when the real lookup fails.
const os = require("node:os");
const userInfo = os.userInfo;
os.userInfo = function forgeUserInfo(options) {
  try {
    return userInfo.call(os, options);
  } catch (error) {
    if (error && error.code !== "ERR_SYSTEM_ERROR") throw error;
    return { uid: process.getuid(), gid: process.getgid(), username: process.env.USER || "forge", homedir: process.env.HOME || "/tmp", shell: null };
  }
};
