// actions/cache/restore@v4 stand-in: the restore step of ../restore.js.
require("../restore.js");
