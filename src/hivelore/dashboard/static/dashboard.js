// Small progressive enhancements: every page works without this file.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // A changed filter shows its result at once (the Show button stays for keyboards and no-JS).
  const filters = document.getElementById("filters");
  if (filters) {
    for (const field of filters.querySelectorAll("select, input[type=checkbox]")) {
      field.addEventListener("change", () => filters.requestSubmit());
    }
  }
  // Forgetting deletes a file: ask first.
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  }
});
