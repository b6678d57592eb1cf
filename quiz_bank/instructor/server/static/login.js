// A "/login#token=..." link fills the sign-in form; the fragment never reaches the server,
// and nothing is signed in until the student presses "Sign in" (a same-origin POST).
(function () {
  var m = /(?:^#|&)token=([^&]+)/.exec(window.location.hash || "");
  var field = document.getElementById("token");
  if (m && field) {
    field.value = decodeURIComponent(m[1]);
    history.replaceState(null, "", window.location.pathname);
  }
})();
